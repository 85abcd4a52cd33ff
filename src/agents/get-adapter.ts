import type { AgentSpec } from "../pipeline/spec.ts";
import type { AgentAdapter } from "./agent-adapter.ts";
import { aiderAgent } from "./aider-agent.ts";
import { claudeAgent } from "./claude-agent.ts";
import { codexAgent } from "./codex-agent.ts";
import { commandAgent } from "./command-agent.ts";
import { geminiAgent } from "./gemini-agent.ts";

const PRESETS: Record<string, AgentAdapter> = { claude: claudeAgent, codex: codexAgent, gemini: geminiAgent, aider: aiderAgent };

/** The adapter for an agent: its preset's, or the generic command agent. */
export function getAdapter(agent: AgentSpec): AgentAdapter {
  if (agent.command) return commandAgent;
  const preset = agent.preset ? PRESETS[agent.preset] : undefined;
  if (!preset) throw new Error(`no adapter for agent preset "${agent.preset}"`);
  return preset;
}
