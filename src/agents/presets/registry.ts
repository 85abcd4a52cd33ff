/**
 * The presets that start an agent CLI, one line each: their descriptions
 * (argv, allowlist and MCP compilers, event parser, result judge), each
 * spreading its traits from pipeline/presets/, where every preset is listed.
 * The built-in openai agent has traits only (it runs inside phaseloop).
 */
import type { AgentPreset } from "./agent-preset.ts";
import { aider } from "./aider.ts";
import { claude } from "./claude.ts";
import { codex } from "./codex.ts";
import { gemini } from "./gemini.ts";

export const CLI_PRESETS: readonly AgentPreset[] = [
  claude,
  codex,
  gemini,
  aider,
];
