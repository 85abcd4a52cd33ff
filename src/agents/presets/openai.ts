/**
 * The openai preset: phaseloop's built-in agent for OpenAI-compatible chat
 * completions servers (Ollama, llama.cpp, vLLM, LM Studio, hosted APIs). It
 * runs inside phaseloop (openai-agent.ts), not as a program, so there is
 * nothing to install and no argv; its tool set is phaseloop's own function
 * tools, enforced as each call is made. It needs the model to ask for
 * (`model:`, required by the schema), and its API host is its `base_url`.
 */
import type { AgentPreset } from "./agent-preset.ts";

export const openai: AgentPreset = {
  name: "openai",
  builtin: true,
  needsModel: true,
  sessions: true,
  mcp: true,
  sandbox: {
    hosts: ["api.openai.com"],
    baseUrlVars: [],
    state: [],
    stateConfig: [],
    housekeeping: [],
  },
};
