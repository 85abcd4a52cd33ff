/** The aider preset's traits (its description is agents/presets/aider.ts). */
import type { PresetTraits } from "./preset-traits.ts";

export const aiderTraits: PresetTraits = {
  name: "aider",
  program: "aider",
  versionArgv: ["aider", "--version"],
  installHint: "install aider (python -m pip install aider-install && aider-install), or change the preset",
  sessions: false,
  mcp: false,
  sandbox: {
    hosts: ["api.openai.com", "api.anthropic.com"],
    baseUrlVars: ["OPENAI_API_BASE", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"],
    state: [".aider", ".cache/aider"],
    stateConfig: [],
    // aider reads its settings from the home directory itself
    homeConfig: [".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json"],
    housekeeping: ["pypi.org", "openrouter.ai"],
    // its own history files (`.aider.chat.history.md`, `.aider.input.history`, `.aider.tags.cache.*`) are its work and stay writable
    projectConfig: [".aider.conf.yml", ".aider.model.settings.yml", ".aider.model.metadata.json", ".aiderignore"],
    // the providers it reaches through litellm
    envPrefixes: ["AIDER_"],
    envNames: ["OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "XAI_API_KEY", "COHERE_API_KEY", "OLLAMA_HOST", "OLLAMA_API_BASE"],
  },
};
