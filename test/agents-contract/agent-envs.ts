/**
 * Each real CLI's environment for a contract test: offline (a fake key, the loopback mock as
 * its API), with a private home (settings as a user would have them) and no telemetry.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { codexConfigFor } from "./responses-mock.ts";
import { pathWith } from "./contract-helpers.ts";

/** Claude Code: `home` (else a new one) with `.claude/settings.json` and `.claude.json` when given. */
export function claudeEnv(bin: string | undefined, apiUrl: string, opts: { home?: string; userSettings?: unknown; claudeJson?: unknown } = {}): Record<string, string> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "phaseloop-claude-home-"));
  mkdirSync(join(home, ".claude"), { recursive: true });
  if (opts.userSettings) writeFileSync(join(home, ".claude/settings.json"), JSON.stringify(opts.userSettings));
  if (opts.claudeJson) writeFileSync(join(home, ".claude.json"), JSON.stringify(opts.claudeJson));
  return {
    PATH: pathWith(bin),
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, ".claude"),
    ANTHROPIC_BASE_URL: apiUrl,
    ANTHROPIC_API_KEY: "sk-ant-phaseloop-test",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    NO_COLOR: "1",
    CI: "true",
  };
}

/**
 * Gemini CLI: `home` (else a new one) whose settings choose API-key auth, as a user chooses it
 * (a base URL alone selects gateway auth, which headless Gemini CLI refuses: exit 41), merged
 * with `settings`; `settings: null` writes none at all. No trust is set: the preset decides it.
 */
export function geminiEnv(bin: string | undefined, apiUrl: string, opts: { home?: string; settings?: Record<string, unknown> | null } = {}): Record<string, string> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "phaseloop-gemini-home-"));
  mkdirSync(join(home, ".gemini"), { recursive: true });
  if (opts.settings !== null) writeFileSync(join(home, ".gemini/settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } }, ...(opts.settings ?? {}) }));
  return { PATH: pathWith(bin), HOME: home, GOOGLE_GEMINI_BASE_URL: apiUrl, GEMINI_API_KEY: "test-key", NO_COLOR: "1" };
}

/**
 * Codex: a private CODEX_HOME whose config.toml names the mock as the model provider (with
 * `userConfig` above the provider table, `userRules` as its execpolicy rules). It lives below
 * the real home's cache, not the temp dir: codex refuses to set up its sandbox helper there.
 */
export function codexEnv(bin: string | undefined, apiUrl: string, opts: { home?: string; userConfig?: string; userRules?: string } = {}): Record<string, string> {
  const base = join(homedir(), ".cache/phaseloop-agents/codex-homes");
  mkdirSync(base, { recursive: true });
  const codexHome = mkdtempSync(join(base, "home-"));
  writeFileSync(join(codexHome, "config.toml"), codexConfigFor(apiUrl, opts.userConfig));
  if (opts.userRules) {
    mkdirSync(join(codexHome, "rules"));
    writeFileSync(join(codexHome, "rules/default.rules"), opts.userRules);
  }
  return { PATH: pathWith(bin), ...(opts.home ? { HOME: opts.home } : {}), CODEX_HOME: codexHome, MOCK_API_KEY: "sk-test" };
}
