/** The claude preset's traits: Claude Code (its description is agents/presets/claude.ts). */
import type { PresetTraits } from "./preset-traits.ts";

export const claudeTraits: PresetTraits = {
  name: "claude",
  program: "claude",
  versionArgv: ["claude", "--version"],
  installHint: "install Claude Code (npm install -g @anthropic-ai/claude-code), or change the preset",
  outputFormat: "claude-stream-json",
  sessions: true,
  mcp: true,
  answerBesideText: true,
  sandbox: {
    hosts: ["api.anthropic.com"],
    baseUrlVars: ["ANTHROPIC_BASE_URL"],
    state: [".claude", ".claude.json", ".cache/claude"],
    stateVars: ["CLAUDE_CONFIG_DIR"],
    stateConfig: ["settings.json", "settings.local.json", "commands", "agents", "hooks", "plugins", "CLAUDE.md", "output-styles"],
    // the preset's own API host among them: refused only where the pipeline moved the API elsewhere
    // (a gateway), and then only the CLI's own side traffic goes there
    housekeeping: ["api.anthropic.com", "statsig.anthropic.com", "statsig.com", "sentry.io", "o1158394.ingest.sentry.io"],
    projectConfig: [".claude"],
    // on Vertex AI: CLAUDE_CODE_USE_VERTEX, CLOUD_ML_REGION, VERTEX_REGION_*
    envPrefixes: ["ANTHROPIC_", "CLAUDE_", "VERTEX_"],
    envNames: ["CLOUD_ML_REGION"],
    // Claude Code on Bedrock reads the AWS credentials; only then do they reach it
    envWhen: { flag: "CLAUDE_CODE_USE_BEDROCK", names: /^AWS_(?:ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|REGION|PROFILE|DEFAULT_REGION|BEARER_TOKEN_BEDROCK)$/ },
  },
};
