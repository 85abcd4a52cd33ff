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
import { PRESETS } from "../agents/presets/registry.ts";

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
  /** How the seccomp filter that refuses Unix sockets goes on (seccomp-filter.ts). */
  seccomp: SeccompLoad;
  /** socat, as the relay runs it (a path, or a wrapper that dies with phaseloop); used with a proxy. */
  socat: string;
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

/**
 * How the filter goes on. Without a relay, bubblewrap loads it itself from a file descriptor
 * (`--seccomp FD`: the caller starts bubblewrap with the filter's bytes there), and it holds
 * for everything inside. With a relay to the proxy, the relay needs its Unix socket first: the
 * filter goes on after it starts, loaded by a few lines of perl (`prctl` with the program's
 * bytes, then exec). Where neither can be had, the sandbox library's helper (`apply-seccomp`,
 * which makes a nested user namespace of its own: about 11 ms more per phase as root).
 */
export interface SeccompLoad {
  /** The filter's bytes in hex. */
  hex: string;
  /** The file descriptor bwrap reads the filter from, without a relay. */
  fd: number;
  /** perl, to load the filter after the relay; its prctl number on this architecture. */
  perl?: { path: string; prctl: number };
  /** The library's helper, where there is no perl. */
  helper?: { path: string; keepSetfcap: boolean };
}

/**
 * perl's part, where a phase may reach hosts: it listens on the relay's port in the sandbox's
 * network namespace (IPv6 with IPv4 mapped in, else IPv4) before anything else runs, so a
 * command that connects at once is queued, never refused; forks the relay (per connection, a
 * Unix socket to the proxy and one process for each direction); then puts the filter on
 * itself (no_new_privs, which bubblewrap set already; struct sock_fprog: the length, padding,
 * a pointer to the instructions) and becomes the command. The relay, started before the
 * filter, keeps its Unix sockets; nothing the command starts can make one.
 * Arguments: prctl's number, the filter in hex, the proxy's socket, the port, the command.
 */
export const PERL_RELAY = [
  // no modules (loading Socket costs more than the rest): the constants and addresses by hand, as Linux has them
  'my($n,$h,$s,$p)=splice(@ARGV,0,4);my$L;',
  'if(socket($L,10,1,0)){setsockopt($L,41,26,0);setsockopt($L,1,2,1);bind($L,pack("S n N a16 N",10,$p,0,"",0))or undef$L}',
  'unless($L){socket($L,2,1,0)or die"phaseloop: relay: $!\\n";setsockopt($L,1,2,1);bind($L,pack("S n a4 x8",2,$p,"\\0\\0\\0\\0"))or die"phaseloop: relay: $!\\n"}',
  // the relay is not dumpable from its first instant (set before the fork, which it inherits; the
  // command's exec makes a process dumpable again): the command, its parent, can neither ptrace
  // it nor read its memory or environment, nor write its memory to make a Unix socket through it
  'listen($L,4096)or die"phaseloop: relay: $!\\n";syscall($n,4,0,0,0,0);my$r=fork;die"phaseloop: relay: $!\\n"unless defined$r;',
  'if(!$r){$SIG{CHLD}="IGNORE";open(STDIN,"<","/dev/null");open(STDOUT,">","/dev/null");open(STDERR,">","/dev/null");',
  'for(;;){my$c;accept($c,$L)or next;my$k=fork;if(defined$k&&!$k){close$L;socket(my$u,1,1,0)or exit;connect($u,pack("S",1).$s."\\0")or exit;',
  'my($i,$o)=fork?($c,$u):($u,$c);my$b;while(sysread($i,$b,65536)){while(length$b){my$y=syswrite($o,$b);exit unless$y;substr($b,0,$y)=""}}shutdown($o,1);exit}close$c}}',
  'close$L;my$f=pack("H*",$h);syscall($n,38,1,0,0,0)==0 or die"phaseloop: no_new_privs: $!\\n";',
  'syscall($n,22,2,pack("S x6 P".length($f),length($f)/8,$f))==0 or die"phaseloop: seccomp: $!\\n";',
  'exec{$ARGV[0]}@ARGV or die"phaseloop: exec $ARGV[0]: $!\\n"',
].join("");

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
  for (const dir of writable) {
    const staged = profile.staged?.find((s) => s.real === dir);
    if (staged === undefined) {
      args.push("--bind", dir, dir);
      continue;
    }
    // a parallel member's copy in the folder's place; inside it, what the member may not write
    // is the real entry read-only, a folder only it may write the real one (sources are the host's)
    args.push("--bind", staged.stage, dir);
    for (const path of staged.readonly) args.push("--ro-bind", path, path);
    for (const path of staged.direct) args.push("--bind", path, path);
  }
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
  // ssh's drop-in configuration could name another ProxyCommand than the proxy's. Without a
  // proxy the network namespace is empty: no command reaches anything, and nothing is hidden
  if (input.proxy !== undefined && kindOf("/etc/ssh/ssh_config.d") === "dir") args.push("--tmpfs", "/etc/ssh/ssh_config.d");
  const { seccomp } = input;
  // the library's helper needs user namespaces (its own nested one). Otherwise none may be made
  // inside, and phaseloop's filter (seccomp-filter.ts) refuses them: it does what bubblewrap's
  // --disable-userns does (a nested user namespace and a sysctl written in it) without their cost
  const helper = seccomp.helper !== undefined && (input.proxy === undefined ? false : seccomp.perl === undefined);
  args.push("--dev", "/dev", "--unshare-pid", "--unshare-user");
  args.push("--cap-drop", "ALL");
  if (helper && seccomp.helper!.keepSetfcap) args.push("--cap-add", "CAP_SETFCAP");
  args.push("--proc", "/proc", "--chdir", input.cwd);

  if (input.proxy === undefined) {
    // nothing to start before the filter: bubblewrap loads it, then starts the command.
    // The environment's own proxy settings would only point where nothing answers.
    for (const name of PROXY_VARS) args.push("--unsetenv", name);
    for (const [k, v] of Object.entries({ SANDBOX_RUNTIME: "1", ...exports })) args.push("--setenv", k, v);
    args.push("--seccomp", String(seccomp.fd), "--", ...(typeof input.command === "string" ? ["/bin/sh", "-c", input.command] : input.command));
    return { args, env: {} };
  }
  const socket = input.proxy.socket;
  const settings = Object.entries(exports).map(([k, v]) => `${k}=${shellQuote(v)}`);
  const user = `${settings.length > 0 ? `export ${settings.join(" ")}; ` : ""}${typeof input.command === "string" ? input.command : `exec ${input.command.map(shellQuote).join(" ")}`}`;
  if (!helper && seccomp.perl !== undefined) {
    // perl listens, starts the relay, puts the filter on and becomes the command: no wait, no shell between
    args.push("--", seccomp.perl.path, "-e", PERL_RELAY, String(seccomp.perl.prctl), seccomp.hex, socket, String(RELAY_PORT), "/bin/sh", "-c", user);
    return { args, env: proxyEnv(input.proxy) };
  }
  // where there is no perl: socat relays, the shell waits for it to listen, the library's helper puts the filter on
  const relay = (family: string, extra: string) => `${shellQuote(input.socat)} ${family}-LISTEN:${RELAY_PORT},${extra}fork,reuseaddr,backlog=4096 UNIX-CONNECT:${shellQuote(socket)}`;
  const script = [
    // IPv6 with IPv4 mapped in serves `localhost` either way; IPv4 alone where the kernel has no IPv6
    `{ ${relay("TCP6", "ipv6only=0,")} || exec ${relay("TCP4", "")}; } >/dev/null 2>&1 &`,
    "_pl_relay=$!",
    ...RELAY_LISTENS,
    "unset _pl_relay",
    // the filter goes on after the relay has its Unix socket; everything the phase starts is under it
    `SRT_ALLOW_NESTED_USERNS=0 exec ${shellQuote(seccomp.helper?.path ?? "apply-seccomp")} /bin/sh -c ${shellQuote(user)}`,
  ].join("\n");
  args.push("--", "/bin/sh", "-c", script);
  return { args, env: proxyEnv(input.proxy) };
}
