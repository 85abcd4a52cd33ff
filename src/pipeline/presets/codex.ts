/**
 * The codex preset's traits: Codex CLI (its description is agents/presets/codex.ts), with
 * what its fence needs beyond data: its own config's providers, its argv inside the fence
 * and the shim that gives it that argv however it is started.
 */
import { parse as parseToml } from "smol-toml";
import { shellQuote } from "../../expr/shell-render.ts";
import { joinPath as join, type PresetTraits } from "./preset-traits.ts";

export const codexTraits: PresetTraits = {
  name: "codex",
  program: "codex",
  versionArgv: ["codex", "--version"],
  installHint: "install Codex CLI (npm install -g @openai/codex), or change the preset",
  outputFormat: "codex-json",
  sessions: true,
  mcp: true,
  sandbox: {
    hosts: ["api.openai.com", "chatgpt.com"],
    baseUrlVars: ["OPENAI_BASE_URL"],
    state: [".codex"],
    stateVars: ["CODEX_HOME"],
    stateConfig: ["config.toml", "rules", "AGENTS.md", "prompts"],
    housekeeping: ["api.openai.com", "chatgpt.com", "sentry.io", "api.github.com"],
    projectConfig: [".codex"],
    envPrefixes: ["OPENAI_", "CODEX_", "AZURE_OPENAI_"],
    ownConfig: {
      file: (env, homedir) => join(env.CODEX_HOME || join(env.HOME || homedir, ".codex"), "config.toml"),
      read: codexProviders,
    },
    insideFence: codexInsideFence,
    fenceShim: codexShim,
  },
};

/**
 * The model providers in codex's own config ($CODEX_HOME/config.toml, else ~/.codex/config.toml):
 * a provider's `base_url` is where codex sends its requests, its `env_key` the variable that
 * holds its key. Nothing when the file is not TOML.
 */
function codexProviders(text: string): { baseUrls: string[]; envKeys: string[] } {
  let found: { base_url?: unknown; env_key?: unknown }[] = [];
  try {
    const config = parseToml(text) as { model_providers?: Record<string, { base_url?: unknown; env_key?: unknown }> };
    found = Object.values(config.model_providers ?? {}).filter((p) => typeof p === "object" && p !== null);
  } catch {
    // not TOML
  }
  return {
    baseUrls: found.map((p) => p.base_url).filter((u): u is string => typeof u === "string"),
    envKeys: found.map((p) => p.env_key).filter((k): k is string => typeof k === "string" && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k)),
  };
}

/**
 * codex exec inside phaseloop's fence. Codex sandboxes its own commands with bubblewrap, which
 * needs a new user namespace; the fence refuses those (a nested user namespace could detach
 * the fence's read-only binds), so inside it every command codex ran failed with "bwrap: No
 * permissions to create new namespace". Inside the fence codex is told to leave the
 * sandboxing to the fence (`-s danger-full-access`): the fence's profile is as strict or
 * stricter (only the write globs' directories writable, no `.git`, home secrets hidden, only
 * the agent's hosts reachable).
 */
function codexInsideFence(argv: string[]): string[] {
  if (argv[1] !== "exec") return argv;
  return argv.map((arg, i) => (i > 0 && (argv[i - 1] === "-s" || argv[i - 1] === "--sandbox") ? "danger-full-access" : arg));
}

/**
 * codex however it is started inside phaseloop's fence (a command agent's `sh -c "codex exec
 * -s workspace-write"`): every `-s`/`--sandbox` of `codex exec` becomes `danger-full-access`,
 * and codex is told so in its config too. Codex's own sandbox is bubblewrap (or Landlock) in a
 * new user namespace, which the fence refuses (a nested one could undo its read-only binds):
 * inside it, each of codex's commands failed and each patch was refused, and the phase looked
 * done. Here phaseloop's fence is the sandbox, on purpose: it is as strict or stricter (only
 * the write globs' folders writable, `.git` never, home secrets hidden, only the agent's
 * hosts). Outside the fence (`sandbox: off`) codex keeps its own.
 */
function codexShim(real: string): string {
  return `#!/bin/sh
# phaseloop: inside phaseloop's OS sandbox, codex leaves the sandboxing to it
if [ "$1" = exec ] || [ "$1" = e ]; then
  _pl_n=0 _pl_prev=
  for _pl_a do
    [ "$_pl_n" -eq 0 ] && set --
    _pl_n=$((_pl_n + 1))
    case "$_pl_prev" in -s|--sandbox) _pl_a=danger-full-access ;; esac
    case "$_pl_a" in
      --sandbox=*) _pl_a=--sandbox=danger-full-access ;;
      --full-auto) _pl_a=--sandbox; _pl_prev=; set -- "$@" "$_pl_a"; _pl_a=danger-full-access ;;
    esac
    _pl_prev=$_pl_a
    set -- "$@" "$_pl_a"
    [ "$_pl_n" -eq 1 ] && set -- "$@" -c 'sandbox_mode="danger-full-access"'
  done
  unset _pl_n _pl_prev _pl_a
fi
exec ${shellQuote(real)} "$@"
`;
}
