/**
 * A host in memory, for tests: a file system of plain objects, programs that
 * answer from a script, a git that answers from a script, and a clock that
 * moves only when told (or by the time a `sleep` asks for).
 *
 * Every change phaseloop makes to the file system is a write, counted (a
 * scripted program's own writes are not); `crashAt: N` makes the
 * N-th one the last: it does not happen (an append or a handle's write is
 * torn: half of it lands), the files are frozen as a killed process leaves
 * them, and this write and every later one throws `HostCrash`. `restart()`
 * gives a fresh host over the frozen files, as a new process would find them.
 */
import { basename, dirname, posix } from "node:path";
import { fsError, type FileHandle, type GitResult, type Host, type HostFiles, type OpenOptions, type ProcessResult, type ProcessSpec, type SyncRun } from "./host.ts";

import { memoryFiles, norm, type MemoryFsCore, type Node } from "./memory-files.ts";
import { FakeClock, START } from "./fake-clock.ts";
import { HostCrash } from "./host-crash.ts";
import { detachIn, MemoryWatches, type DetachScript } from "./memory-extras.ts";
import type { DetachSpec } from "./host.ts";

export { FakeClock, HostCrash };


/** What a scripted program does: its output and exit, and any files it writes (through `host`). */
export interface ScriptedRun {
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  durationMs?: number;
  signal?: string | null;
  spawnError?: string;
}

export type ProcessScript = (spec: ProcessSpec, host: MemoryHost) => ScriptedRun | Promise<ScriptedRun>;
/** What git answers; `host` is the memory host, for the files a git command makes or removes (not counted as phaseloop's writes). */
export type GitScript = (args: string[], options: { cwd: string; input?: string }, host: MemoryHost) => GitResult;

export interface MemoryHostOptions {
  /** Files to start with: path → text (folders are made). */
  files?: Record<string, string>;
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Epoch milliseconds the clock starts at. */
  now?: number;
  processes?: ProcessScript;
  git?: GitScript;
  /** What `programs.version` answers, by program. */
  versions?: Record<string, string>;
  /** The host's own process id (4242; a restarted host is the next one). */
  pid?: number;
  /** Other processes alive on this machine, by pid (the host's own pid always is). */
  alive?: number[];
  /** Make the N-th write (1-based) the last. */
  crashAt?: number;
  /** With `crashAt`: an append or handle write at the crash lands half its data (a torn line). */
  tear?: boolean;
  /** What a program started to outlive phaseloop does (default: it runs on). */
  detach?: DetachScript;
  /** What `processes.runSync` answers (default: the program is not found). */
  runSync?: (argv: readonly string[], cwd: string | undefined) => { status: number | null; stdout: string };
}

export class MemoryHost implements Host, MemoryFsCore {
  readonly clock: FakeClock;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly pid: number;
  readonly files: HostFiles;
  readonly processes: Host["processes"];
  readonly programs: Host["programs"];
  readonly git: Host["git"];
  /** Writes made so far (the one a crash was injected at included). */
  writes = 0;
  /** The files as the crash left them, once it happened. */
  crashed: Map<string, Node> | undefined;
  /** @internal */ nodes = new Map<string, Node>([["/", { kind: "dir", mode: 0o755, mtimeMs: START }]]);
  private readonly options: MemoryHostOptions;
  private readonly workingDir: string;
  /** @internal */ temp = 0;
  /** Scripted programs running now. */
  private inProgram = 0;
  /** The watches of `files.watch`. */
  /** @internal */ readonly watches = new MemoryWatches();
  /** Programs started to outlive phaseloop (`processes.detach`), in order. */
  readonly detached: DetachSpec[] = [];
  /** What was written to each descriptor (`files.writeDescriptor`): 1 stdout, 2 stderr. */
  readonly printed: Record<number, string> = {};

  constructor(options: MemoryHostOptions = {}) {
    this.options = options;
    this.pid = options.pid ?? 4242;
    this.clock = new FakeClock(options.now);
    this.env = Object.freeze({ ...(options.env ?? {}) });
    this.workingDir = norm(options.cwd ?? "/work");
    this.mkdirs(this.workingDir);
    for (const [path, text] of Object.entries(options.files ?? {})) {
      this.mkdirs(dirname(this.abs(path)));
      this.nodes.set(this.abs(path), { kind: "file", data: text, mode: 0o644, mtimeMs: this.clock.now() });
    }
    this.files = memoryFiles(this);
    const script = options.processes;
    this.processes = {
      runSync: (argv, o = {}): SyncRun => {
        const r = options.runSync?.(argv, o.cwd);
        if (!r) return { status: null, stdout: new Uint8Array(), error: fsError("ENOENT", `spawnSync ${argv[0]}`, argv[0]!) };
        return { status: r.status, stdout: new TextEncoder().encode(r.stdout) };
      },
      run: async (spec) => {
        if (!script) return this.runScripted(spec, { spawnError: `command not found: ${Array.isArray(spec.command) ? spec.command[0] : "sh"}` });
        let run: ScriptedRun;
        this.inProgram++;
        try {
          run = await script(spec, this);
        } finally {
          this.inProgram--;
        }
        return this.runScripted(spec, run);
      },
      alive: (pid) => pid === this.pid || (options.alive?.includes(pid) ?? false),
      // scripted programs end with their run: nothing is left behind
      stopRun: async () => [],
      detach: (spec) => detachIn(this.detached, options.detach, spec),
    };
    // a program is found when a file of that name with an execute bit is on the search path
    this.programs = {
      find: async (program, cwd, search) => {
        const dirs = program.includes("/") ? [""] : search.split(":").filter(Boolean);
        for (const dir of dirs) {
          const full = norm(posix.resolve(cwd, dir, program));
          const node = this.get(full);
          if (node?.kind === "file" && (node.mode & 0o111) !== 0) return full;
        }
        return null;
      },
      version: async (argv) => options.versions?.[argv[0]!] ?? null,
    };
    const git = options.git;
    const gitRun = (args: string[], o: { cwd: string; input?: string }): GitResult => {
      if (!git) return { status: 128, stdout: "", stderr: "fatal: not a git repository\n" };
      this.inProgram++;
      try {
        return git(args, { cwd: o.cwd, ...(o.input !== undefined ? { input: o.input } : {}) }, this);
      } finally {
        this.inProgram--;
      }
    };
    this.git = {
      run: (args, o) => gitRun(args, o),
      // a started git answers once the current work is done, as a process would
      start: async (args, o) => {
        await new Promise((done) => setImmediate(done));
        return gitRun(args, o);
      },
      startAll: async (commands, o) => {
        await new Promise((done) => setImmediate(done));
        // as `sh -c "a && b"`: the output of each that ran, together; the status of the last
        const all: GitResult = { status: 0, stdout: "", stderr: "" };
        for (const args of commands) {
          const r = gitRun(args, o);
          all.stdout += r.stdout;
          all.stderr += r.stderr;
          all.status = r.status;
          if (r.status !== 0) break;
        }
        return all;
      },
    };
  }

  cwd(): string {
    return this.workingDir;
  }

  /** A path made absolute as a process in `cwd` sees it. */
  /** @internal */ abs(path: string): string {
    return norm(posix.resolve(this.workingDir, path));
  }

  /** Every file's text, by path (folders and links left out). */
  snapshot(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [path, node] of [...(this.crashed ?? this.nodes).entries()].sort()) if (node.kind === "file") out[path] = node.data;
    return out;
  }

  /** A host over the files as they are now (or as the crash left them): a new process on the same disk, the clock where it was. */
  restart(options: Omit<MemoryHostOptions, "files"> = {}): MemoryHost {
    const next = new MemoryHost({ env: this.options.env, cwd: this.workingDir, processes: this.options.processes, git: this.options.git, now: this.clock.now(), pid: this.pid + 1, ...options });
    next.nodes = new Map([...(this.crashed ?? this.nodes).entries()].map(([k, v]) => [k, { ...v }]));
    return next;
  }

  /** Count a write; the injected crash freezes the files and throws. `tear` lands part of it first. */
  /** @internal */ write(tear?: () => void): void {
    this.watches.changed();
    // a program's own writes are not phaseloop's: a crash of phaseloop neither stops nor tears them
    if (this.inProgram > 0) return;
    if (this.crashed) throw new HostCrash(this.writes);
    this.writes++;
    if (this.options.crashAt !== undefined && this.writes >= this.options.crashAt) {
      if (this.options.tear && tear) tear();
      this.crashed = new Map([...this.nodes.entries()].map(([k, v]) => [k, { ...v }]));
      throw new HostCrash(this.writes);
    }
  }

  /** @internal */ resolveLinks(path: string, follow: boolean, depth = 0): string {
    const p = this.abs(path);
    if (p === "/") return p;
    const parent = this.resolveLinks(dirname(p), true, depth);
    const full = norm(posix.join(parent, basename(p)));
    const node = this.nodes.get(full);
    if (follow && node?.kind === "link") {
      if (depth > 32) throw fsError("ELOOP", "open", path);
      return this.resolveLinks(posix.resolve(dirname(full), node.target), true, depth + 1);
    }
    return full;
  }

  /** @internal */ get(path: string, follow = true): Node | undefined {
    try {
      return this.nodes.get(this.resolveLinks(path, follow));
    } catch {
      return undefined;
    }
  }

  /** @internal */ parentDir(path: string, syscall: string): string {
    const p = this.resolveLinks(path, false);
    const parent = this.nodes.get(dirname(p));
    if (!parent) throw fsError("ENOENT", syscall, path);
    if (parent.kind !== "dir") throw fsError("ENOTDIR", syscall, path);
    return p;
  }

  /** @internal */ mkdirs(path: string, mode = 0o755): void {
    const p = norm(path);
    if (p === "/") return;
    this.mkdirs(dirname(p));
    const node = this.nodes.get(p);
    if (node?.kind === "dir") return;
    if (node) throw fsError("EEXIST", "mkdir", path);
    this.nodes.set(p, { kind: "dir", mode, mtimeMs: this.clock.now() });
  }

  /** @internal */ fileFor(path: string, options: OpenOptions, truncate: boolean): Node & { kind: "file" } {
    const p = this.parentDir(path, "open");
    let node = this.nodes.get(p);
    if (node?.kind === "link" && options.noFollow) {
      if (!options.replaceNonFile) throw fsError("ELOOP", "open", path);
      this.nodes.delete(p);
      node = undefined;
    }
    const target = node?.kind === "link" ? this.resolveLinks(p, true) : p;
    node = this.nodes.get(target);
    if (node?.kind === "dir") {
      if (!options.replaceNonFile) throw fsError("EISDIR", "open", path);
      for (const k of [...this.nodes.keys()]) if (k === target || k.startsWith(`${target}/`)) this.nodes.delete(k);
      node = undefined;
    }
    if (!node) {
      node = { kind: "file", data: "", mode: 0o644, mtimeMs: this.clock.now() };
      this.nodes.set(target, node);
    } else if (truncate && node.kind === "file") node.data = "";
    return node as Node & { kind: "file" };
  }

  /** @internal */ handle(node: Node & { kind: "file" }): FileHandle {
    let open = true;
    const live = () => {
      // after the crash nothing phaseloop does lands, a late write to a handle it closed as it fell included
      if (this.crashed) throw new HostCrash(this.writes);
      if (!open) throw fsError("EBADF", "write", "");
    };
    return {
      write: (data) => {
        live();
        this.write(() => (node.data += data.slice(0, Math.floor(data.length / 2))));
        node.data += data;
        node.mtimeMs = this.clock.now();
      },
      truncate: (length = 0) => {
        live();
        this.write();
        node.data = node.data.slice(0, length);
      },
      sync: () => live(),
      close: () => {
        open = false;
      },
    };
  }

  /** A program at `path` (an executable file; setting up a test, not counted as a write). */
  program(path: string, text = "#!/bin/sh\n"): void {
    this.mkdirs(dirname(this.abs(path)));
    this.nodes.set(this.abs(path), { kind: "file", data: text, mode: 0o755, mtimeMs: this.clock.now() });
  }

  /** A symbolic link at `path` to `target` (setting up a test; not counted as a write). */
  symlink(target: string, path: string): void {
    this.mkdirs(dirname(this.abs(path)));
    this.nodes.set(this.abs(path), { kind: "link", target, mode: 0o777, mtimeMs: this.clock.now() });
  }

  private async runScripted(spec: ProcessSpec, run: ScriptedRun): Promise<ProcessResult> {
    const stdout = run.stdout ?? "";
    const stderr = run.stderr ?? "";
    // a scripted program ends as soon as it has printed: its terminal result never needs the grace
    for (const [stream, text] of [["stdout", stdout], ["stderr", stderr]] as const) {
      if (text === "") continue;
      for (const line of text.split("\n").slice(0, text.endsWith("\n") ? -1 : undefined)) spec.onLine?.(stream, line);
    }
    let wroteLogs = false;
    // as run-process.ts does: a log file (and its folder) is made on the first output
    if (spec.stdoutFile && stdout) {
      this.files.mkdir(dirname(spec.stdoutFile));
      this.files.writeText(spec.stdoutFile, stdout);
      wroteLogs = true;
    }
    if (spec.stderrFile && stderr) {
      this.files.mkdir(dirname(spec.stderrFile));
      this.files.writeText(spec.stderrFile, stderr);
      wroteLogs = true;
    }
    if (run.durationMs) await this.clock.sleep(run.durationMs);
    const aborted = spec.signal?.aborted ?? false;
    return {
      exitCode: run.spawnError ? null : (run.exitCode ?? 0),
      signal: run.signal ?? null,
      timedOut: false,
      idleTimedOut: false,
      aborted,
      spawnError: run.spawnError,
      durationMs: run.durationMs ?? 0,
      stdout,
      stdoutTail: stdout.slice(-64 * 1024),
      stderrTail: stderr.slice(-64 * 1024),
      wroteLogs,
      pid: run.spawnError ? undefined : 10_000 + this.writes,
    };
  }
}
