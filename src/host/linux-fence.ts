/**
 * The Linux fence of one phase, built by phaseloop: bubblewrap started directly with the
 * arguments of sandbox/bwrap-args.ts, reaching the network through the library's proxy
 * (started once per run) when the phase may reach any host. Undefined when something it needs
 * is missing (the library's seccomp helper for this architecture, its proxy socket): the
 * library then wraps the phase.
 */
import { Buffer } from "node:buffer";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { absentProtected, bwrapArgs, type PathKind, type ProxyRoute, type SeccompLoad } from "../sandbox/bwrap-args.ts";
import { ARCHES, filterBytes, filterHex } from "../sandbox/seccomp-filter.ts";
import { ownProgram } from "./own-programs.ts";
import { shellQuote } from "../expr/shell-render.ts";
import { withFd3 } from "./fd-launch.ts";
import { anchorsOf, realpath, resolver, type Resolve } from "./fence-undo.ts";
import { isUnder, type SandboxProfile } from "../sandbox/compile-sandbox.ts";

export interface LinuxWrap {
  argv: string[];
  env: Record<string, string>;
  /** Protected paths that did not exist when the phase started: if they do after, it made them. */
  absent: string[];
  /** Each absent path's nearest folder that existed then, and where it really was. */
  anchors?: Record<string, { dir: string; real: string }>;
  /** The names in the private /tmp (the phase's temp dir) where bubblewrap binds the host's entries back: the mount points it makes there. */
  tmpMounts?: string[];
}

const ARCH: Record<string, string> = { x64: "x64", arm64: "arm64" };

let seccompPath: string | null | undefined;

/** The library's seccomp helper, found beside the library wherever npm put it: only where there is no perl. */
function applySeccompPath(): string | undefined {
  if (seccompPath !== undefined) return seccompPath ?? undefined;
  seccompPath = null;
  const arch = ARCH[process.arch];
  if (arch === undefined) return undefined;
  const rel = join("node_modules", "@anthropic-ai", "sandbox-runtime", "vendor", "seccomp", arch, "apply-seccomp");
  let dir: string;
  try {
    dir = dirname(fileURLToPath(import.meta.url));
  } catch {
    return undefined;
  }
  for (;;) {
    const candidate = join(dir, rel);
    if (existsSync(candidate)) {
      seccompPath = candidate;
      return candidate;
    }
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/** Root with CAP_SETFCAP in its bounding set: the helper's nested user namespace needs it kept. */
function keepSetfcap(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    const line = /^CapBnd:\s*([0-9a-f]+)/m.exec(readFileSync("/proc/self/status", "utf8"));
    return line !== null && (BigInt(`0x${line[1]}`) & (1n << 31n)) !== 0n;
  } catch {
    return false;
  }
}

/** The fd bubblewrap reads the filter from (fd-launch.ts opens it there). */
const FILTER_FD = 3;
let filterFile: string | undefined;

/**
 * The filter's bytes in a file of this process's own (a folder of mode 0700, removed when the
 * process exits), from which the shell that starts bubblewrap opens it on FILTER_FD.
 */
function seccompFile(arch: string): string {
  if (filterFile !== undefined && existsSync(filterFile)) return filterFile;
  const bytes = filterBytes(arch)!;
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-seccomp-"));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  filterFile = join(dir, "filter.bpf");
  writeFileSync(filterFile, bytes, { mode: 0o400 });
  return filterFile;
}

/** How this phase's filter goes on (bwrap-args.ts), or undefined when it cannot here. */
function seccompLoad(proxied: boolean): SeccompLoad | undefined {
  const hex = filterHex(process.arch);
  if (hex === undefined) return undefined;
  if (!proxied) return { hex, fd: FILTER_FD };
  const perl = ownProgram("perl");
  if (perl.startsWith("/")) return { hex, fd: FILTER_FD, perl: { path: perl, prctl: ARCHES[process.arch]!.prctl } };
  const helper = applySeccompPath();
  return helper === undefined ? undefined : { hex, fd: FILTER_FD, helper: { path: helper, keepSetfcap: keepSetfcap() } };
}

/** What a path is, following links, or undefined when nothing is there. */
function kindNow(path: string): PathKind {
  try {
    const st = statSync(path, { throwIfNoEntry: false });
    return st === undefined ? undefined : st.isDirectory() ? "dir" : "file";
  } catch {
    return undefined;
  }
}

/**
 * What each path the fence names is, each looked at once. The workdir's own entries, where
 * most of them are (every protected name), are read in one listing of it rather than one look
 * each; only a link among them is followed.
 */
function kinds(cwd: string, listed: Map<string, PathKind | "link"> | undefined): (path: string) => PathKind {
  const seen = new Map<string, PathKind>();
  return (path) => {
    if (!seen.has(path)) {
      const entry = listed !== undefined && dirname(path) === cwd ? listed.get(basename(path)) : null;
      seen.set(path, entry === undefined ? undefined : entry === null || entry === "link" ? kindNow(path) : entry);
    }
    return seen.get(path);
  };
}

/** A folder's entries by name (a link as "link"), or undefined when it cannot be listed. */
function listing(dir: string): Map<string, PathKind | "link"> | undefined {
  try {
    const out = new Map<string, PathKind | "link">();
    for (const entry of readdirSync(dir, { withFileTypes: true })) out.set(entry.name, entry.isSymbolicLink() ? "link" : entry.isDirectory() ? "dir" : "file");
    return out;
  } catch {
    return undefined;
  }
}

const SKIP = new Set(["node_modules", ".phaseloop", ".git"]);

/**
 * Git repositories nested in the writable directories of the workdir (three levels down, as
 * the library looks): their hooks and config would run code the next time someone uses them.
 */
function nestedRepos(profile: SandboxProfile, cwd: string, listed: Map<string, PathKind | "link"> | undefined): string[] {
  const found: string[] = [];
  const walk = (dir: string, depth: number) => {
    // the workdir's listing is the one already made
    const entries = dir === cwd ? listed : listing(dir);
    if (entries === undefined) return;
    for (const [name, kind] of entries) {
      const path = join(dir, name);
      if (name === ".git" && dir !== cwd) {
        if (kind === "dir") found.push(join(path, "hooks"), join(path, "config"));
        else found.push(path);
      } else if (kind === "dir" && !SKIP.has(name) && depth < 3) walk(path, depth + 1);
    }
  };
  for (const dir of profile.allowWrite) if (isUnder(dir, cwd)) walk(dir, dir.split("/").length - cwd.split("/").length);
  return found;
}

/**
 * Where the programs and folders outside the workdir that a fenced process may need lead (its
 * PATH, node, the helpers), as this run first found them: they decide only which of the host's
 * /tmp entries it still sees, read-only, and are not the agent's to change. Forgotten when the
 * run's fences close.
 */
const outsideSeen = new Map<string, string | undefined>();

export function forgetFenceLookups(): void {
  outsideSeen.clear();
}

/**
 * The write directories bubblewrap may bind. A directory of the workdir that resolves outside
 * it (a symlink an earlier phase left, say `out -> ~`) is dropped: binding it would make what it
 * points to writable. Directories outside the workdir (the agent's state, the temp dir) are the
 * user's and phaseloop's, not the agent's, and stay.
 */
export function bindableWrites(profile: SandboxProfile, cwd: string, resolve: Resolve = realpath): string[] {
  const root = resolve(cwd) ?? cwd;
  return profile.allowWrite.filter((dir) => {
    if (!isUnder(dir, cwd)) return true;
    const real = resolve(dir);
    return real === undefined || isUnder(real, root);
  });
}

/**
 * The entries of the host's /tmp a fenced process must still see under its private /tmp:
 * the top-level entry holding each place it works in, reads its programs from or reaches the
 * proxy through. Undefined (no private /tmp) when one of them is /tmp itself.
 */
export function tmpKeep(profile: SandboxProfile, cwd: string, needed: readonly string[]): string[] | undefined {
  const keep = new Set<string>();
  const paths = [cwd, ...profile.allowWrite, ...profile.denyRead, ...profile.denyWrite, ...(profile.carveOut ?? []), ...needed];
  for (const path of paths) {
    if (path === "" || !path.startsWith("/")) continue;
    const normal = path.replace(/\/+$/, "") || "/";
    if (normal === "/tmp") return undefined;
    if (!normal.startsWith("/tmp/") || normal === profile.tmp || (profile.tmp !== undefined && isUnder(normal, profile.tmp))) continue;
    keep.add(`/tmp/${normal.slice(5).split("/")[0]}`);
  }
  return [...keep].sort();
}

/** The paths under /tmp a text names (a command, a variable's value): what the process will look for there. */
export function tmpPathsIn(text: string): string[] {
  return [...text.matchAll(/(?:^|[\s:='"=,])(\/tmp\/[^\s:'"\/,;]+)/g)].map((m) => m[1]!).slice(0, 64);
}

/** Whether phaseloop can build this machine's fence itself (else the library wraps each phase). */
export function ownFenceAvailable(): boolean {
  return process.platform === "linux" && filterHex(process.arch) !== undefined;
}

/**
 * The command as the fence starts it without a proxy: an argv whose program is found on
 * `search` (a PATH) starts directly, with no shell between the seccomp helper and it; else
 * a shell starts it and says so in its own words ("sh: 1: exec: x: not found", exit 127).
 */
export function directCommand(command: string[] | string, search: string | undefined, cwd: string): string[] | string {
  if (typeof command === "string" || command.length === 0) return command;
  const program = findProgramNow(command[0]!, cwd, search ?? "");
  return program === null ? `exec ${command.map(shellQuote).join(" ")}` : [program, ...command.slice(1)];
}

/** findProgram (preflight-host.ts), without a round through the thread pool for each folder of PATH: a phase waits for it. */
function findProgramNow(program: string, cwd: string, path: string): string | null {
  const executable = (full: string) => {
    try {
      const info = statSync(full, { throwIfNoEntry: false });
      return info !== undefined && info.isFile() && (info.mode & 0o111) !== 0;
    } catch {
      return false;
    }
  };
  if (program.includes("/")) {
    const full = isAbsolute(program) ? program : resolve(cwd, program);
    return executable(full) ? full : null;
  }
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const full = join(resolve(cwd, dir), program);
    if (executable(full)) return full;
  }
  return null;
}

/** How a phase that may reach hosts reaches the library's proxy (undefined parts: it has none running). */
export interface ProxyWanted {
  commandId: string;
  /** socat as the relay runs it. */
  socat: string;
  socket: string | undefined;
  token: string | undefined;
}

/**
 * Wrap a command in this phase's fence, or undefined when the library must do it. Without
 * `proxy` (a phase that may reach no host) the network namespace stays empty and the command
 * (see directCommand) starts under the seccomp helper directly.
 */
export function wrapLinux(profile: SandboxProfile, command: string[] | string, cwd: string, exports: Record<string, string>, proxy: ProxyWanted | undefined, search?: string, seen: readonly string[] = []): LinuxWrap | undefined {
  if (process.platform !== "linux") return undefined;
  const seccomp = seccompLoad(proxy !== undefined);
  if (seccomp === undefined) return undefined;
  let route: ProxyRoute | undefined;
  if (proxy !== undefined) {
    const { socket, token } = proxy;
    if (socket === undefined || token === undefined) return undefined;
    route = { socket, token, username: `srt.${Buffer.from(proxy.commandId).toString("base64")}` };
  }
  // the workdir's entries, listed once: what most paths the fence names are, and where nested repositories are looked for
  const listed = listing(cwd);
  const kindOf = kinds(cwd, listed);
  const resolve = resolver();
  profile = { ...profile, allowWrite: bindableWrites(profile, cwd, resolve) };
  const needed = [seccomp.perl?.path ?? "", seccomp.helper?.path ?? "", proxy?.socat ?? "", proxy?.socket ? dirname(proxy.socket) : "", process.execPath, process.argv[1] ?? "", process.env.HOME ?? "", exports.HOME ?? "", ...(search ?? "").split(":"), ...seen, ...tmpPathsIn(typeof command === "string" ? command : command.join(" "))];
  if (typeof command !== "string" && command[0]?.startsWith("/")) needed.push(command[0]);
  // a path reached through a link (a package in node_modules linked from elsewhere in /tmp): where it leads, too
  const words = typeof command === "string" ? command.split(/[\s'"=:]+/) : command;
  const lead = (path: string) => {
    if (isUnder(path, cwd)) return resolve(path);
    if (!outsideSeen.has(path)) {
      // a process that wraps for many runs without closing them keeps a bounded few
      if (outsideSeen.size >= 4096) outsideSeen.clear();
      outsideSeen.set(path, realpath(path));
    }
    return outsideSeen.get(path);
  };
  for (const path of [...needed]) if (path.startsWith("/")) needed.push(lead(path) ?? "");
  // what the command names: `/tmp` itself (`ls /tmp`, `TMPDIR=/tmp`) is its private /tmp; only what lies in the host's is looked for
  for (const word of words.slice(0, 64)) {
    const led = word.startsWith("/") ? lead(word) : undefined;
    if (led !== undefined && led !== "/tmp") needed.push(led);
  }
  const keep = tmpKeep(profile, cwd, needed);
  const { args, env } = bwrapArgs({
    profile,
    cwd,
    command,
    exports,
    ...(route !== undefined ? { proxy: route } : {}),
    seccomp,
    socat: proxy?.socat ?? "socat",
    nestedProtected: nestedRepos(profile, cwd, listed),
    kindOf,
    ...(keep !== undefined ? { tmpKeep: keep } : {}),
  });
  const absent = absentProtected({ profile, cwd, kindOf });
  // without a relay bubblewrap loads the filter itself, from the file opened on its fd by the shell that starts it
  const argv = route !== undefined ? ["bwrap", ...args] : withFd3(ownProgram("sh"), seccompFile(process.arch), [ownProgram("bwrap"), ...args]);
  return { argv, env, absent, anchors: anchorsOf(absent, resolve), ...(keep !== undefined ? { tmpMounts: keep.map((entry) => entry.slice("/tmp/".length)) } : {}) };
}
