/**
 * The aider preset: the prompt in a message file, no auto-commits, no shell
 * suggestions (`--yes-always` would otherwise run them). Output is human
 * text: success is the exit code plus phaseloop's own checks (outputs,
 * measured changes). aider keeps no session phaseloop can name and has no
 * MCP client; its tool set is checked afterwards only.
 */
import { createTextParser } from "../text-parser.ts";
import type { AgentPreset } from "./agent-preset.ts";

export const aider: AgentPreset = {
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
  invocation(input) {
    const argv = ["aider", "--message-file", input.promptFile, "--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty", "--no-suggest-shell-commands"];
    if (input.agent.model) argv.push("--model", input.agent.model);
    argv.push(...(input.agent.args ?? []).map(input.render));
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, env, outputFormat: "text" };
  },
  createParser: createTextParser,
};
