/**
 * Every agent preset phaseloop knows, one line each: a pipeline's `preset:`
 * names one of these. Pure: the pipeline's checks, the schema
 * (scripts/schema-src.mjs), the sandbox compiler and the fence read the
 * presets' traits here; the runner starts a CLI preset through its
 * description (`CLI_PRESETS`, every preset but the built-in openai agent).
 * Adding a CLI is a description in this folder and its line here
 * (docs/agents.md, "Adding an agent CLI").
 */
import type { AgentPreset, PresetTraits, SandboxNeeds } from "./agent-preset.ts";
import { aider } from "./aider.ts";
import { claude } from "./claude.ts";
import { codex } from "./codex.ts";
import { gemini } from "./gemini.ts";
import { openai } from "./openai.ts";
import { opencode } from "./opencode.ts";
import { qwen } from "./qwen.ts";

export const PRESETS: readonly PresetTraits[] = [
  claude,
  codex,
  gemini,
  aider,
  openai,
  opencode,
  qwen,
];

/** A preset that starts an agent CLI (it has argv and a parser), unlike the built-in openai agent. */
export function startsCli(preset: PresetTraits): preset is AgentPreset {
  return "invocation" in preset && "createParser" in preset;
}

/** The presets that start an agent CLI, in the registry's order: their descriptions become the runner's adapters. */
export const CLI_PRESETS: readonly AgentPreset[] = PRESETS.filter(startsCli);

/** The preset of that name, or undefined. */
export function presetNamed(name: string | undefined): PresetTraits | undefined {
  return name === undefined ? undefined : PRESETS.find((p) => p.name === name);
}

const NO_NEEDS: SandboxNeeds = { hosts: [], baseUrlVars: [], state: [], stateConfig: [], housekeeping: [] };

/** What a preset's program needs from the OS sandbox; nothing for a command agent or a `run:` phase ("command"). */
export function sandboxNeeds(name: string): SandboxNeeds {
  return presetNamed(name)?.sandbox ?? NO_NEEDS;
}
