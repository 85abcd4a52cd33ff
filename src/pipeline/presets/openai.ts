/**
 * The openai preset: phaseloop's built-in agent for OpenAI-compatible chat
 * completions servers (Ollama, llama.cpp, vLLM, LM Studio, hosted APIs). It
 * runs inside phaseloop (openai-agent.ts), not as a program, so there is
 * nothing to install and no argv; its tool set is phaseloop's own function
 * tools, enforced as each call is made. It needs the model to ask for
 * (`model:`, required by the schema), and its API host is its `base_url`.
 * Traits only: it has no description in agents/presets/ (no argv, no parser).
 */
import type { PresetTraits } from "./preset-traits.ts";

export const openaiTraits: PresetTraits = {
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
