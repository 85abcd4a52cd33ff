/**
 * Every agent preset phaseloop knows, one line each: a pipeline's `preset:`
 * names one of these. Pure: the pipeline's checks and the sandbox compiler
 * read it as the runner does. Adding a CLI is a description in this folder
 * and its line here (docs/agents.md, "Adding an agent CLI").
 */
import type { AgentPreset } from "./agent-preset.ts";
import { claude } from "./claude.ts";
import { codex } from "./codex.ts";
import { gemini } from "./gemini.ts";

export const PRESETS: readonly AgentPreset[] = [
  claude,
  codex,
  gemini,
];

/** The preset of that name, or undefined. */
export function presetNamed(name: string | undefined): AgentPreset | undefined {
  return name === undefined ? undefined : PRESETS.find((p) => p.name === name);
}
