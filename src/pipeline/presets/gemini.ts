/** The gemini preset's traits: Gemini CLI (its description is agents/presets/gemini.ts). */
import type { PresetTraits } from "./preset-traits.ts";

export const geminiTraits: PresetTraits = {
  name: "gemini",
  program: "gemini",
  versionArgv: ["gemini", "--version"],
  installHint: "install Gemini CLI (npm install -g @google/gemini-cli), or change the preset",
  outputFormat: "gemini-stream-json",
  sessions: true,
  mcp: true,
  sandbox: {
    hosts: ["generativelanguage.googleapis.com", "oauth2.googleapis.com"],
    baseUrlVars: ["GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"],
    state: [".gemini", ".cache/gemini"],
    stateVars: ["GEMINI_CLI_HOME"],
    stateConfig: ["settings.json", "GEMINI.md", "commands", "extensions", "policies"],
    housekeeping: ["generativelanguage.googleapis.com", "play.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"],
    projectConfig: [".gemini"],
    envPrefixes: ["GEMINI_", "GOOGLE_GENAI_"],
    envNames: ["GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_GEMINI_BASE_URL"],
  },
};
