/**
 * The bubblewrap command line of one sandboxed phase on Linux, built from its profile and
 * what is on disk. Pure: the caller looks at the disk (which paths exist, and as what) and
 * this turns the answers into arguments. It makes the same fence as the sandbox library's
 * Linux wrap (read-only root, the write directories bound writable, protected names inside
 * them bound read-only again, secrets masked, a network namespace of its own that reaches
 * the library's proxy through one relay, a seccomp filter that refuses Unix sockets) without
 * its per-command ripgrep scan and program lookups, which cost more than the sandbox itself.
 */
import { shellQuote } from "../expr/shell-render.ts";
import type { SandboxProfile } from "./compile-sandbox.ts";
import { isUnder } from "./compile-sandbox.ts";
import { PRESETS } from "../pipeline/presets/registry.ts";

export type PathKind = "dir" | "file" | undefined;

/**
 * Names that no phase may change inside a writable directory of the workdir, whatever its
 * write globs say and whichever agent runs: shell and tool settings that run code the next
 * time someone opens the repository, every agent CLI's project settings (a hook or an MCP
 * server written there runs the next time any of them starts, not only the one that wrote it),
 * MCP files, and hook managers' folders (a `.husky/pre-commit` runs at the user's next
 * commit). The sandbox library's list (DANGEROUS_FILES and its dangerous directories, 0.0.83)
 * and more.
 */
export const PROTECTED_NAMES: readonly string[] = [
  ".gitconfig",
  ".gitmodules",
  ".bashrc",
  ".bash_profile",
  ".zshrc",
  ".zprofile",
  ".profile",
  ".envrc",
  ".ripgreprc",
  ".mcp.json",
  ".vscode",
  ".idea",
  ".cursor",
  // each agent CLI's project settings (its preset's `sandbox.projectConfig`)
  ...PRESETS.flatMap((p) => p.sandbox.projectConfig ?? []),
  ".husky",
  ".githooks",
  ".lefthook",
  "lefthook.yml",
  ".lefthook.yml",
  ".pre-commit-config.yaml",
];

/** Whether `rel` (relative to the workdir) is a protected name or inside one. */
export function isProtectedPath(rel: string): boolean {
  const top = rel.split("/")[0] ?? "";
  return PROTECTED_NAMES.some((name) => name === top);
}

/** The proxy a sandbox reaches its allowed hosts through. */
export interface ProxyRoute {
  /** The library's Unix socket on the host, bound into the sandbox. */
  socket: string;
  /** `srt.<base64 of the command id>`: the proxy attributes connections and refusals by it. */
  username: string;
  /** The proxy's credential for this run. */
  token: string;
}

export interface BwrapInput {
  profile: SandboxProfile;
  /** The phase's working directory. */
  cwd: string;
  /** The command: an argv run as is, or a shell script for `sh -c`. */
  command: string[] | string;
  /** Variables set inside, after everything else. */
  exports: Record<string, string>;
  /**
   * The proxy the phase's allowed hosts are reached through; none when it may reach no host.
   * Without one the sandbox's network namespace stays empty (not even a relay to the proxy),
   * and a client names the host it could not resolve or reach in its own error.
   */
  proxy?: ProxyRoute;
  /** The seccomp helper that refuses Unix sockets to everything it starts. */
  applySeccomp: string;
  /** socat, as the relay runs it (a path, or a wrapper that dies with phaseloop); used with a proxy. */
  socat: string;
  /** Running as root with CAP_SETFCAP: the seccomp helper's nested namespace needs it kept. */
  keepSetfcap: boolean;
  /** Extra paths to bind read-only inside writable directories (nested repositories' hooks and config). */
  nestedProtected: readonly string[];
  /** What each path the fence mentions is on disk. */
  kindOf(path: string): PathKind;
  /**
   * Entries of the host's `/tmp` the process still sees (read-only) under its private one:
   * the workdir's, home's, the helpers' when they live there. Undefined: no private `/tmp`.
   */
  tmpKeep?: readonly string[];
}

/** The port the relay listens on inside the sandbox's network namespace. */
export const RELAY_PORT = 3128;

/**
 * Shell lines that return once the relay listens (it starts in the background, and a command
 * that connects at once would find nothing there). They start no program: they run before
 * the seccomp filter is on. The namespace is new, so one TCP socket in use is the relay's.
 * They give up after 0.3 s by /proc/uptime (hundredths; the leading 1 keeps a 0 from being
 * read as octal), or when the relay has exited.
 */
const RELAY_LISTENS = [
  "_pl_since=",
  'while [ -r /proc/net/sockstat ] && kill -0 "$_pl_relay" 2>/dev/null; do',
  "  _pl_up=0",
  "  for _pl_counts in /proc/net/sockstat /proc/net/sockstat6; do",
  '    [ -r "$_pl_counts" ] || continue',
  "    while read -r _pl_kind _pl_skip _pl_inuse _pl_skip; do",
  '      case "$_pl_kind" in TCP: | TCP6:) _pl_up=$((_pl_up + _pl_inuse)); break ;; esac',
  '    done < "$_pl_counts"',
  "  done",
  '  [ "$_pl_up" -lt 1 ] || break',
  "  read -r _pl_now _pl_skip 2>/dev/null < /proc/uptime || break",
  "  _pl_now=1${_pl_now%.*}${_pl_now#*.}",
  '  [ "$((_pl_now - ${_pl_since:=$_pl_now}))" -lt 30 ] || break',
  "done",
  "unset _pl_since _pl_now _pl_up _pl_counts _pl_kind _pl_skip _pl_inuse",
];

/** The variables through which programs are sent to a proxy. */
const PROXY_VARS = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "GRPC_PROXY", "DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY", "http_proxy", "https_proxy", "all_proxy", "grpc_proxy"] as const;

/** The variables that send a process's connections through the proxy. */
export function proxyEnv(proxy: ProxyRoute): Record<string, string> {
  const url = `http://${encodeURIComponent(proxy.username)}:${proxy.token}@localhost:${RELAY_PORT}`;
  const env: Record<string, string> = { SANDBOX_RUNTIME: "1", NO_PROXY: "", no_proxy: "" };
  for (const name of PROXY_VARS) env[name] = url;
  // git sends the credential at once instead of waiting to be asked; ssh goes through the proxy
  env.GIT_CONFIG_PARAMETERS = "'http.proxyAuthMethod=basic'";
  env.GIT_SSH_COMMAND = `ssh -o ControlMaster=no -o ControlPath=none -o ProxyCommand='socat - PROXY:localhost:%h:%p,proxyport=${RELAY_PORT},proxyauth=${proxy.username}:${proxy.token}'`;
  return env;
}

function under(path: string, dirs: readonly string[]): boolean {
  return dirs.some((dir) => isUnder(path, dir));
}

/**
 * The protected paths (inside writable directories) that do not exist yet: the fence cannot
 * bind what is not there without leaving a mount point behind in the user's tree, so
 * phaseloop looks for them after the phase instead.
 */
export function absentProtected(input: Pick<BwrapInput, "profile" | "cwd" | "kindOf">): string[] {
  const writable = input.profile.allowWrite;
  return protectedCandidates(input.profile, input.cwd).filter((p) => under(p, writable) && input.kindOf(p) === undefined);
}

function protectedCandidates(profile: SandboxProfile, cwd: string): string[] {
  return [...profile.denyWrite, ...PROTECTED_NAMES.map((name) => `${cwd === "/" ? "" : cwd}/${name}`), ...(profile.protect ?? [])];
}

/** bwrap's arguments, and the variables to start it with (the proxy's credential stays out of argv). */
export function bwrapArgs(input: BwrapInput): { args: string[]; env: Record<string, string> } {
  const { profile, kindOf } = input;
  const privateTmp = profile.tmp !== undefined && input.tmpKeep !== undefined && kindOf(profile.tmp) === "dir";
  // the temp dir is the private /tmp itself, not bound again where the host keeps it
  const writable = profile.allowWrite.filter((dir) => kindOf(dir) !== undefined && !(privateTmp && dir === profile.tmp));
  // --die-with-parent: bubblewrap dies with phaseloop, killed or not, and everything inside with it (its PID namespace)
  const args = ["--new-session", "--die-with-parent", "--unshare-net", "--ro-bind", "/", "/"];
  const exports = { ...input.exports };
  if (privateTmp) {
    // a private /tmp: the phase's temp dir in its place, what the process needs from the host's
    // bound back read-only; a tool writing /tmp by name writes there, and nothing leaks out
    args.push("--bind", profile.tmp!, "/tmp");
    for (const entry of input.tmpKeep!) if (kindOf(entry) !== undefined) args.push("--ro-bind", entry, entry);
    exports.TMPDIR = "/tmp";
  }
  if (input.proxy) args.push("--bind", input.proxy.socket, input.proxy.socket);
  for (const dir of writable) args.push("--bind", dir, dir);
  const protectedPaths = [...protectedCandidates(profile, input.cwd), ...input.nestedProtected];
  for (const path of new Set(protectedPaths)) {
    if (under(path, writable) && kindOf(path) !== undefined) args.push("--ro-bind", path, path);
  }
  // a folder every phase writes inside a protected one (the run's artifacts in `.phaseloop`): bound after it
  for (const dir of profile.carveOut ?? []) if (kindOf(dir) === "dir") args.push("--bind", dir, dir);
  for (const path of profile.denyRead) {
    const kind = kindOf(path);
    if (kind === "dir") args.push("--tmpfs", path, "--remount-ro", path);
    else if (kind === "file") args.push("--ro-bind", "/dev/null", path);
  }
  // ssh's drop-in configuration could name another ProxyCommand
  if (kindOf("/etc/ssh/ssh_config.d") === "dir") args.push("--tmpfs", "/etc/ssh/ssh_config.d");
  args.push("--dev", "/dev", "--unshare-pid", "--unshare-user", "--cap-drop", "ALL");
  if (input.keepSetfcap) args.push("--cap-add", "CAP_SETFCAP");
  args.push("--proc", "/proc", "--chdir", input.cwd);

  if (input.proxy === undefined) {
    // nothing to start before the filter: bubblewrap starts the helper, the helper the command.
    // The environment's own proxy settings would only point where nothing answers.
    for (const name of PROXY_VARS) args.push("--unsetenv", name);
    for (const [k, v] of Object.entries({ SANDBOX_RUNTIME: "1", ...exports, SRT_ALLOW_NESTED_USERNS: "0" })) args.push("--setenv", k, v);
    args.push("--", input.applySeccomp, ...(typeof input.command === "string" ? ["/bin/sh", "-c", input.command] : input.command));
    return { args, env: {} };
  }
  const socket = input.proxy.socket;
  const settings = Object.entries(exports).map(([k, v]) => `${k}=${shellQuote(v)}`);
  const user = `${settings.length > 0 ? `export ${settings.join(" ")}; ` : ""}${typeof input.command === "string" ? input.command : `exec ${input.command.map(shellQuote).join(" ")}`}`;
  const relay = (family: string, extra: string) => `${shellQuote(input.socat)} ${family}-LISTEN:${RELAY_PORT},${extra}fork,reuseaddr,backlog=4096 UNIX-CONNECT:${shellQuote(socket)}`;
  const script = [
    // IPv6 with IPv4 mapped in serves `localhost` either way; IPv4 alone where the kernel has no IPv6
    `{ ${relay("TCP6", "ipv6only=0,")} || exec ${relay("TCP4", "")}; } >/dev/null 2>&1 &`,
    "_pl_relay=$!",
    ...RELAY_LISTENS,
    "unset _pl_relay",
    // the filter goes on after the relay has its Unix socket; everything the phase starts is under it
    `SRT_ALLOW_NESTED_USERNS=0 exec ${shellQuote(input.applySeccomp)} /bin/sh -c ${shellQuote(user)}`,
  ].join("\n");
  args.push("--", "/bin/sh", "-c", script);
  return { args, env: proxyEnv(input.proxy) };
}
