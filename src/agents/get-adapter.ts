/**
 * The runner's adapter for an agent: a preset's description (presets/) with
 * what starting its CLI needs from the machine (the host's files and
 * environment, given by the runner), or the generic command agent.
 */
import { homedir } from "node:os";
import type { AgentSpec } from "../pipeline/spec.ts";
import type { AgentAdapter } from "./agent-adapter.ts";
import { commandAgentWith } from "./command-agent.ts";
import type { AgentPreset, PresetEffects } from "./presets/agent-preset.ts";
import { CLI_PRESETS } from "./presets/registry.ts";
import { privateConfigFile, type PrivateConfigHost } from "./private-config.ts";

/** What building an invocation asks of the host: files (a CLI's own config read, the private configuration written), environment, pid. */
export interface AdapterHost extends PrivateConfigHost {
  readonly files: PrivateConfigHost["files"] & { readText(path: string): string };
}

/** What a preset may ask of the machine, on this host. */
export function presetEffects(host: AdapterHost): PresetEffects {
  return {
    configFile: (name, extension, text) => privateConfigFile(host, name, extension, text),
    env: host.env,
    homedir,
    readText(path) {
      try {
        return host.files.readText(path);
      } catch {
        return undefined;
      }
    },
  };
}

/** A preset's description as the runner's adapter. */
export function adapterOf(preset: AgentPreset, fx: PresetEffects): AgentAdapter {
  return { name: preset.name, ...(preset.versionArgv ? { versionArgv: preset.versionArgv } : {}), buildInvocation: (input) => preset.invocation(input, fx), createParser: preset.createParser };
}

/** The adapter of each preset that starts a CLI, by name. */
export function adaptersOf(fx: PresetEffects): Readonly<Record<string, AgentAdapter>> {
  return Object.fromEntries(CLI_PRESETS.map((p) => [p.name, adapterOf(p, fx)]));
}

/** The adapter for an agent: its preset's, or the generic command agent. */
export function getAdapter(agent: AgentSpec, fx: PresetEffects): AgentAdapter {
  if (agent.command) return commandAgentWith(fx);
  const preset = agent.preset !== undefined ? CLI_PRESETS.find((p) => p.name === agent.preset) : undefined;
  if (!preset) throw new Error(`no adapter for agent preset "${agent.preset}"`);
  return adapterOf(preset, fx);
}
