/**
 * Every agent preset phaseloop knows, one line each: a pipeline's `preset:`
 * names one of these. Pure and low in the layers: the pipeline's checks, the
 * schema (scripts/schema-src.mjs), the sandbox compiler and the fence read
 * the presets' traits here; the runner starts a CLI preset through its
 * description, listed in agents/presets/registry.ts. Adding a CLI:
 * docs/agents.md, "Adding an agent CLI".
 */
import { aiderTraits } from "./aider.ts";
import { claudeTraits } from "./claude.ts";
import { codexTraits } from "./codex.ts";
import { geminiTraits } from "./gemini.ts";
import { openaiTraits } from "./openai.ts";
import type { PresetTraits, SandboxNeeds } from "./preset-traits.ts";

export const PRESETS: readonly PresetTraits[] = [
  claudeTraits,
  codexTraits,
  geminiTraits,
  aiderTraits,
  openaiTraits,
];

/** The preset of that name, or undefined. */
export function presetNamed(name: string | undefined): PresetTraits | undefined {
  return name === undefined ? undefined : PRESETS.find((p) => p.name === name);
}

const NO_NEEDS: SandboxNeeds = { hosts: [], baseUrlVars: [], state: [], stateConfig: [], housekeeping: [] };

/** What a preset's program needs from the OS sandbox; nothing for a command agent or a `run:` phase ("command"). */
export function sandboxNeeds(name: string): SandboxNeeds {
  return presetNamed(name)?.sandbox ?? NO_NEEDS;
}
