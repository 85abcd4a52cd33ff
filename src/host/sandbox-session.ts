/**
 * One OS sandbox per run: the library's network proxies start once, each phase's process is
 * wrapped in its own profile (bubblewrap on Linux, Seatbelt on macOS), and what the sandbox
 * refused is read back from the library's violation records and the process's own errors.
 */
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { SandboxManager as Manager } from "@anthropic-ai/sandbox-runtime";
import type { SandboxProfile } from "../sandbox/compile-sandbox.ts";
import { readRefusals, readStreamRefusals } from "../sandbox/read-refusals.ts";
import { shellQuote } from "../expr/shell-render.ts";
import { insideFence } from "../agents/inside-fence.ts";
import { directCommand, ownFenceAvailable, wrapLinux } from "./linux-fence.ts";
import { madeProtected, undoProtected } from "./fence-undo.ts";

export interface WrappedCommand {
  /** argv to spawn without a shell. */
  argv: string[];
  /** Variables to lay over the phase's environment (proxy settings). */
  env: Record<string, string>;
  /** Key under which the library records this process's violations. */
  commandId: string;
  /** Built by phaseloop (Linux): protected paths that were absent when it started. Else the library's wrap. */
  absent?: string[];
  /** Where each absent path's nearest existing folder really was, so that undoing it never goes through a link. */
  anchors?: Record<string, { dir: string; real: string }>;
  /** Whether its connections go through the library's proxy (registered under `commandId`). */
  proxied: boolean;
  /** Built by phaseloop: the mount points bubblewrap makes in the private /tmp (linux-fence.ts). */
  tmpMounts?: string[];
  /** The protected paths it made, once sandboxRefusals has looked (releaseSandboxed undoes them without looking again). */
  made?: string[];
}

let opened: Promise<void> | undefined;

/**
 * socat, ended with the process that started it. The library's network bridges are socat
 * processes it starts and stops; a phaseloop that is killed cannot stop them, and they would
 * run on. Started through `setpriv --pdeathsig KILL`, they die with it.
 */
let bridgeDir: string | undefined;

/** A directory of this process's own (mode 0700), removed when the session closes. */
function ownDir(): string {
  bridgeDir ??= mkdtempSync(join(tmpdir(), "phaseloop-bridge-"));
  return bridgeDir;
}

function setprivPath(): string | undefined {
  return process.platform === "linux" ? ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p)) : undefined;
}

function boundSocat(): string | undefined {
  const setpriv = setprivPath();
  if (setpriv === undefined) return undefined;
  // nobody else can put a program in a directory of this process's own
  const path = join(ownDir(), "socat");
  if (!existsSync(path)) writeFileSync(path, `#!/bin/sh\nexec ${setpriv} --pdeathsig KILL socat "$@"\n`, { mode: 0o755 });
  return path;
}

function socatOption(): { socatPath?: string } {
  const path = boundSocat();
  return path === undefined ? {} : { socatPath: path };
}

/**
 * The sandbox library, loaded when a phase first needs it (a proxy for its hosts, or a wrap
 * phaseloop does not build itself): loading it takes about 0.1 s, which a run of phases
 * that may reach no host never pays.
 */
let sandboxManager: typeof Manager | undefined;

/** The library once loaded: every wrap that uses it loaded it (wrapInSandbox awaits openSandboxSession). */
function manager(): typeof Manager {
  if (sandboxManager === undefined) throw new Error("the sandbox library is not loaded");
  return sandboxManager;
}

/** Start the sandbox's proxies for this process (once; later calls reuse them). */
export function openSandboxSession(): Promise<void> {
  opened ??= (async () => {
    sandboxManager ??= (await import("@anthropic-ai/sandbox-runtime")).SandboxManager;
    const options = { network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowWrite: [], denyWrite: [] }, ...socatOption() };
    // The library makes its proxy's sockets in the temp dir, one named by this process's id
    // (`srt-mux-PID-0.sock`). One that another user's process of the same id left there (a
    // run killed before it could remove it) cannot be removed, and listening on it fails.
    // Made in a directory of this process's own, they meet nothing; phases inherit the
    // environment copied when the run started, so they do not see the change.
    const temp = process.env.TMPDIR;
    process.env.TMPDIR = ownDir();
    try {
      await sandboxManager.initialize(options);
    } finally {
      if (temp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = temp;
    }
  })();
  return opened;
}

/** Wraps not yet released: released when the session closes if their phase did not. */
const wraps = new Set<WrappedCommand>();

/** Stop the proxies. */
export async function closeSandboxSession(): Promise<void> {
  if (opened === undefined) return;
  opened = undefined;
  for (const wrapped of [...wraps]) releaseSandboxed(wrapped);
  await manager().reset();
  if (bridgeDir !== undefined) rmSync(bridgeDir, { recursive: true, force: true });
  bridgeDir = undefined;
}

/**
 * Wrap a command (argv, or a string for `sh -c`) so it runs inside `profile`. `exports` are
 * set inside, after the library's own settings; `search` is the PATH an argv's program is
 * found on. A phase that may reach some host reaches it through the proxy, loopback too (the
 * library exempts loopback, but inside the sandbox's network namespace loopback is empty;
 * through the proxy an allowed loopback host is reachable and any other is refused and
 * recorded). One that may reach none gets no proxy: nothing answers it at all.
 */
export async function wrapInSandbox(profile: SandboxProfile, given: string[] | string, cwd: string, exports: Record<string, string> = {}, search?: string, seen: readonly string[] = []): Promise<WrappedCommand> {
  const command = insideFence(given);
  const commandId = `phaseloop-${randomUUID()}`;
  // a phase that may reach no host needs neither the proxy nor a relay to it: its network
  // namespace stays empty (on Linux, where phaseloop builds the fence itself)
  if (profile.allowedHosts.length === 0 && ownFenceAvailable()) {
    const own = wrapLinux(profile, directCommand(command, search, cwd), cwd, { NO_PROXY: "", no_proxy: "", ...exports }, undefined, search, seen);
    if (own !== undefined) {
      const made: WrappedCommand = { argv: own.argv, env: own.env, commandId, absent: own.absent, ...(own.anchors ? { anchors: own.anchors } : {}), ...(own.tmpMounts ? { tmpMounts: own.tmpMounts } : {}), proxied: false };
      wraps.add(made);
      return made;
    }
  }
  await openSandboxSession();
  const settings = Object.entries({ NO_PROXY: "", no_proxy: "", ...exports }).map(([k, v]) => `${k}=${shellQuote(v)}`);
  const text = `export ${settings.join(" ")}; ${typeof command === "string" ? command : `exec ${command.map(shellQuote).join(" ")}`}`;
  const library = manager();
  library.registerCommandNetworkLists(commandId, { allowedDomains: profile.allowedHosts });
  const own = wrapLinux(profile, command, cwd, { NO_PROXY: "", no_proxy: "", ...exports }, { commandId, socat: boundSocat() ?? "socat", socket: library.getLinuxHttpSocketPath(), token: library.getProxyAuthToken() }, search, seen);
  if (own !== undefined) {
    // bubblewrap dies with phaseloop (--die-with-parent), and the relay inside with it
    const made: WrappedCommand = { argv: own.argv, env: own.env, commandId, absent: own.absent, ...(own.anchors ? { anchors: own.anchors } : {}), ...(own.tmpMounts ? { tmpMounts: own.tmpMounts } : {}), proxied: true };
    wraps.add(made);
    return made;
  }
  const wrapped = await library.wrapWithSandboxArgv(
    text,
    "/bin/sh",
    {
      network: { allowedDomains: [], deniedDomains: [] },
      filesystem: { denyRead: profile.denyRead, allowWrite: profile.allowWrite, denyWrite: profile.denyWrite },
    },
    undefined,
    cwd,
    { commandId },
  );
  const env: Record<string, string> = {};
  // Only what the library adds (proxy settings): the phase's own environment stays the phase's.
  for (const [key, value] of Object.entries(wrapped.env)) if (value !== undefined && value !== process.env[key]) env[key] = value;
  // the sandbox ends with phaseloop, killed or not: its shell dies with it, bubblewrap with
  // its shell (--die-with-parent), and every process inside with bubblewrap (its PID namespace)
  const carved = carveOut(wrapped.argv, profile);
  const setpriv = setprivPath();
  const argv = setpriv === undefined ? carved : [setpriv, "--pdeathsig", "KILL", ...carved];
  const made: WrappedCommand = { argv, env, commandId, proxied: true };
  wraps.add(made);
  return made;
}

/**
 * Release what was kept for one wrapped command, once it ended. Each wrap is made afresh: the
 * library creates mount points for what it protects (a `.git` that does not exist yet, say)
 * and removes them here, before phaseloop measures what the phase changed.
 */
export function releaseSandboxed(wrapped: WrappedCommand): void {
  if (!wraps.delete(wrapped)) return;
  if (wrapped.proxied) manager().unregisterCommandNetworkLists(wrapped.commandId);
  // the library removes its mount points; phaseloop's own wrap made none, and undoes what the
  // phase made at protected names (sandboxRefusals has named them)
  if (wrapped.absent === undefined) manager().cleanupAfterCommand();
  else undoProtected(wrapped.absent, wrapped.anchors, wrapped.made);
}

/**
 * What the sandbox refused this command: the library's violation records (the proxy's
 * refusals among them) and what the process's own errors say (see read-refusals.ts).
 */
export function sandboxRefusals(profile: SandboxProfile, wrapped: WrappedCommand, stderr: string, cwd: string, stdout = ""): string[] {
  const refused = new Set<string>([...readRefusals(stderr, cwd, profile), ...readStreamRefusals(stdout, cwd, profile)]);
  // the process has ended, and everything inside with it (its PID namespace): what it made stays as found here
  if (wrapped.absent !== undefined) wrapped.made = madeProtected(wrapped.absent);
  for (const path of wrapped.made ?? []) refused.add(`write ${path}`);
  if (wrapped.proxied) {
    for (const violation of manager().getSandboxViolationStore().getViolationsForCommand(wrapped.commandId)) refused.add(violation.line.trim());
  }
  return [...refused];
}

/**
 * Make the profile's carve-outs (a writable folder inside a read-only one: the run's artifacts
 * folder inside `.phaseloop`) writable where the library wraps the command. The library mounts
 * what it denies after what it allows, so the deny covers the folder; bubblewrap applies
 * mounts in order, so a bind of the folder right after the deny's read-only bind opens it
 * again, and only it. A carve-out whose path would need quoting, or whose deny is not found
 * as one read-only bind, is left closed.
 */
function carveOut(argv: string[], profile: SandboxProfile): string[] {
  if (!profile.carveOut?.length) return argv;
  const at = argv.findIndex((a) => a.startsWith("bwrap "));
  if (at < 0) return argv;
  let script = argv[at]!;
  for (const dir of profile.carveOut) {
    const deny = profile.denyWrite.find((d) => dir.startsWith(`${d}/`));
    if (deny === undefined || !/^[\w@%+=:,./-]+$/.test(dir) || !/^[\w@%+=:,./-]+$/.test(deny)) continue;
    const bind = ` --ro-bind ${deny} ${deny} `;
    const i = script.indexOf(bind);
    if (i < 0 || script.indexOf(bind, i + 1) >= 0) continue;
    script = `${script.slice(0, i + bind.length)}--bind ${dir} ${dir} ${script.slice(i + bind.length)}`;
  }
  return argv.map((a, i) => (i === at ? script : a));
}
