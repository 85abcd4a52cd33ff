/**
 * The runner's adapter for an agent: a preset's description (presets/) with
 * what starting its CLI needs from the machine, or the generic command agent.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import process from "node:process";
import type { AgentSpec } from "../pipeline/spec.ts";
import type { AgentAdapter } from "./agent-adapter.ts";
import { commandAgent } from "./command-agent.ts";
import type { AgentPreset, PresetEffects } from "./presets/agent-preset.ts";
import { CLI_PRESETS } from "./presets/registry.ts";
import { privateConfigFile } from "./private-config.ts";

const effects: PresetEffects = {
  configFile: privateConfigFile,
  env: process.env,
  homedir,
  readText(path) {
    try {
      return readFileSync(path, "utf8");
    } catch {
      return undefined;
    }
  },
};

/** A preset's description as the runner's adapter. */
export function adapterOf(preset: AgentPreset): AgentAdapter {
  return { name: preset.name, ...(preset.versionArgv ? { versionArgv: preset.versionArgv } : {}), buildInvocation: (input) => preset.invocation(input, effects), createParser: preset.createParser };
}

/** The adapter of each preset that starts a CLI, by name. */
export const adapters: Readonly<Record<string, AgentAdapter>> = Object.fromEntries(CLI_PRESETS.map((p) => [p.name, adapterOf(p)]));

/** The adapter for an agent: its preset's, or the generic command agent. */
export function getAdapter(agent: AgentSpec): AgentAdapter {
  if (agent.command) return commandAgent;
  const preset = agent.preset !== undefined && Object.hasOwn(adapters, agent.preset) ? adapters[agent.preset] : undefined;
  if (!preset) throw new Error(`no adapter for agent preset "${agent.preset}"`);
  return preset;
}
