/**
 * Every agent preset phaseloop knows, one line each: a pipeline's `preset:`
 * names one of these. Pure: the pipeline's checks and the sandbox compiler
 * read it as the runner does. Adding a CLI is a description in this folder
 * and its line here (docs/agents.md, "Adding an agent CLI").
 */
import type { AgentPreset, SandboxNeeds } from "./agent-preset.ts";
import { aider } from "./aider.ts";
import { claude } from "./claude.ts";
import { codex } from "./codex.ts";
import { gemini } from "./gemini.ts";
import { openai } from "./openai.ts";

export const PRESETS: readonly AgentPreset[] = [
  claude,
  codex,
  gemini,
  aider,
  openai,
];

/** The preset of that name, or undefined. */
export function presetNamed(name: string | undefined): AgentPreset | undefined {
  return name === undefined ? undefined : PRESETS.find((p) => p.name === name);
}

const NO_NEEDS: SandboxNeeds = { hosts: [], baseUrlVars: [], state: [], stateConfig: [], housekeeping: [] };

/** What a preset's program needs from the OS sandbox; nothing for a command agent or a `run:` phase ("command"). */
export function sandboxNeeds(name: string): SandboxNeeds {
  return presetNamed(name)?.sandbox ?? NO_NEEDS;
}
