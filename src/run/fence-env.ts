/**
 * The environment a fenced agent gets: what the pipeline names (its `env`, the phase's and
 * the agent's: the process's own variables) and, of what phaseloop inherited from the shell
 * it was started in, only what a process needs to run (PATH, HOME, locale, terminal,
 * certificates, toolchain homes) and, for an agent, its CLI's API variables. The rest of the
 * parent's environment (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `NPM_TOKEN`, …) does not reach
 * it: a pipeline that wants one passes it by name (`env: { GITHUB_TOKEN: "{{ env.GITHUB_TOKEN }}" }`).
 * Pure. Each preset names the variables its CLI reads (its `sandbox.envNames` and
 * `envPrefixes`); an agent phase's fence passes those of every preset, since a command agent
 * may start any of the CLIs.
 */
import { PRESETS } from "../pipeline/presets/registry.ts";

/** Inherited variables every fenced process keeps. */
const BASE = new Set([
  "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TERMINFO", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
  "LANG", "LANGUAGE", "TZ", "PWD", "HOSTNAME", "CI", "EDITOR", "VISUAL", "PAGER",
  "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
  "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
  "NODE_OPTIONS", "NODE_PATH", "NODE_ENV", "NODE_NO_WARNINGS",
  "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN", "GOPATH", "GOROOT", "GOFLAGS", "GOTOOLCHAIN", "JAVA_HOME",
  "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PNPM_HOME", "NVM_DIR", "NVM_BIN", "VOLTA_HOME",
  "BUN_INSTALL", "DENO_DIR", "DENO_INSTALL", "GEM_HOME", "GEM_PATH", "RBENV_ROOT", "PYENV_ROOT", "PIPX_HOME",
]);

/** Inherited variables an agent keeps: its CLI's API keys, endpoints and settings. */
const AGENT_EXACT = new Set(PRESETS.flatMap((p) => p.sandbox.envNames ?? []));
const AGENT_PREFIXES = PRESETS.flatMap((p) => p.sandbox.envPrefixes ?? []);
/** Variables that pass only when a flag says the CLI reads them (claude's AWS credentials, on Bedrock). */
const AGENT_WHEN = PRESETS.flatMap((p) => (p.sandbox.envWhen ? [p.sandbox.envWhen] : []));

export interface EnvNeeds {
  /** An agent phase (its CLI's API variables pass), not a `run` phase or a hook. */
  agent: boolean;
  /** Further inherited names the agent's own configuration names (codex's `env_key`). */
  names?: readonly string[];
}

/** Whether an inherited variable reaches a fenced process. */
export function inheritedPasses(name: string, needs: EnvNeeds, env: Record<string, string | undefined>): boolean {
  if (BASE.has(name) || name.startsWith("LC_") || name.startsWith("PHASELOOP_")) return true;
  if (!needs.agent) return false;
  if (AGENT_EXACT.has(name) || AGENT_PREFIXES.some((prefix) => name.startsWith(prefix)) || needs.names?.includes(name)) return true;
  return AGENT_WHEN.some((w) => w.names.test(name) && /^(?:1|true)$/i.test(env[w.flag] ?? ""));
}

/**
 * The variables to lay over a process's environment so that only what passes is left: each
 * inherited one that does not pass set to undefined (a child process is not given a variable
 * whose value is undefined). Own variables of `env` (the pipeline's, the phase's, the agent's)
 * always pass.
 */
export function withheld(env: Record<string, string | undefined>, needs: EnvNeeds): Record<string, undefined> {
  const out: Record<string, undefined> = {};
  for (const name in env) if (!Object.hasOwn(env, name) && !inheritedPasses(name, needs, env)) out[name] = undefined;
  return out;
}
