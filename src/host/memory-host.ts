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
import { fsError, type DirEntry, type ExactFileInfo, type FileHandle, type FileInfo, type GitResult, type Host, type HostFiles, type OpenOptions, type ProcessResult, type ProcessSpec, type SourceRead, type SyncRun } from "./host.ts";

import { FakeClock, START } from "./fake-clock.ts";
import { HostCrash } from "./host-crash.ts";
import { copyIn, detachIn, MemoryWatches, openReadIn, type DetachScript } from "./memory-extras.ts";
import type { DetachSpec } from "./host.ts";

export { FakeClock, HostCrash };

type Node = { kind: "file"; data: string; mode: number; mtimeMs: number } | { kind: "dir"; mode: number; mtimeMs: number } | { kind: "link"; target: string; mode: number; mtimeMs: number };

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

function norm(path: string): string {
  const p = posix.resolve("/", path);
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

const inodes = new WeakMap<Node, number>();
let lastInode = 0;

function info(node: Node): FileInfo {
  if (!inodes.has(node)) inodes.set(node, ++lastInode);
  return {
    isFile: () => node.kind === "file",
    isDirectory: () => node.kind === "dir",
    isSymbolicLink: () => node.kind === "link",
    isFIFO: () => false,
    isSocket: () => false,
    size: node.kind === "file" ? new TextEncoder().encode(node.data).length : 0,
    // the type's bits too, as a stat's mode has them
    mode: TYPE_BITS[node.kind] | node.mode,
    mtimeMs: node.mtimeMs,
    ctimeMs: node.mtimeMs,
    ino: inodeOf(node),
    dev: 1,
    nlink: 1,
    uid: typeof process.getuid === "function" ? process.getuid() : 0,
  };
}

/** A node's inode number: one per node, never reused in the process (caches keyed by path and stat cannot mix two hosts' files). */
function inodeOf(node: Node): number {
  let ino = inodes.get(node);
  if (ino === undefined) inodes.set(node, (ino = ++lastInode));
  return ino;
}

const TYPE_BITS = { file: 0o100000, dir: 0o040000, link: 0o120000 } as const;

function exactInfo(node: Node): ExactFileInfo {
  const ns = BigInt(Math.round(node.mtimeMs * 1e6));
  return {
    mode: BigInt(TYPE_BITS[node.kind] | (node.mode & 0o7777)),
    size: BigInt(node.kind === "file" ? new TextEncoder().encode(node.data).length : 0),
    mtimeNs: ns,
    ctimeNs: ns,
    ino: BigInt(inodeOf(node)),
    isDirectory: () => node.kind === "dir",
  };
}

export class MemoryHost implements Host {
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
  private nodes = new Map<string, Node>([["/", { kind: "dir", mode: 0o755, mtimeMs: START }]]);
  private readonly options: MemoryHostOptions;
  private readonly workingDir: string;
  private temp = 0;
  /** Scripted programs running now. */
  private inProgram = 0;
  /** The watches of `files.watch`. */
  private readonly watches = new MemoryWatches();
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
    this.files = this.makeFiles();
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
  private abs(path: string): string {
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
  private write(tear?: () => void): void {
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

  private resolveLinks(path: string, follow: boolean, depth = 0): string {
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

  private get(path: string, follow = true): Node | undefined {
    try {
      return this.nodes.get(this.resolveLinks(path, follow));
    } catch {
      return undefined;
    }
  }

  private parentDir(path: string, syscall: string): string {
    const p = this.resolveLinks(path, false);
    const parent = this.nodes.get(dirname(p));
    if (!parent) throw fsError("ENOENT", syscall, path);
    if (parent.kind !== "dir") throw fsError("ENOTDIR", syscall, path);
    return p;
  }

  private mkdirs(path: string, mode = 0o755): void {
    const p = norm(path);
    if (p === "/") return;
    this.mkdirs(dirname(p));
    const node = this.nodes.get(p);
    if (node?.kind === "dir") return;
    if (node) throw fsError("EEXIST", "mkdir", path);
    this.nodes.set(p, { kind: "dir", mode, mtimeMs: this.clock.now() });
  }

  private fileFor(path: string, options: OpenOptions, truncate: boolean): Node & { kind: "file" } {
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

  private handle(node: Node & { kind: "file" }): FileHandle {
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

  private makeFiles(): HostFiles {
    const self = this;
    return {
      readText(path) {
        const node = self.get(path);
        if (!node) throw fsError("ENOENT", "open", path);
        if (node.kind !== "file") throw fsError("EISDIR", "read", path);
        return node.data;
      },
      readBytes(path) {
        return new TextEncoder().encode(this.readText(path));
      },
      truncate(path, length) {
        const node = self.get(path);
        if (!node) throw fsError("ENOENT", "open", path);
        if (node.kind !== "file") throw fsError("EISDIR", "open", path);
        self.write();
        const bytes = new TextEncoder().encode(node.data);
        node.data = new TextDecoder().decode(bytes.subarray(0, length));
      },
      readSource(path): SourceRead {
        const node = self.get(path);
        if (!node) return undefined;
        if (node.kind === "dir") return { problem: `"${path}" is a directory, not a file` };
        return node.kind === "file" ? node.data : undefined;
      },
      writeText(path, data, options = {}) {
        const p = self.parentDir(path, "open");
        if (options.exclusive && self.nodes.has(p)) throw fsError("EEXIST", "open", path);
        if (self.get(path)?.kind === "dir") throw fsError("EISDIR", "open", path);
        self.write();
        const target = self.nodes.get(p)?.kind === "link" ? self.resolveLinks(p, true) : p;
        self.nodes.set(target, { kind: "file", data, mode: options.mode ?? 0o644, mtimeMs: self.clock.now() });
      },
      writeAtomic(path, data) {
        const p = self.parentDir(path, "open");
        self.write();
        self.nodes.set(p, { kind: "file", data, mode: 0o644, mtimeMs: self.clock.now() });
      },
      appendText(path, data) {
        const node = self.fileFor(path, {}, false);
        self.write(() => (node.data += data.slice(0, Math.floor(data.length / 2))));
        node.data += data;
      },
      openAppend(path, options = {}) {
        const existed = self.get(path, !options.noFollow)?.kind === "file";
        if (!existed) self.write();
        return self.handle(self.fileFor(path, options, false));
      },
      openWrite(path, options = {}) {
        self.write();
        return self.handle(self.fileFor(path, options, true));
      },
      mkdir(path, options = {}) {
        if (options.exclusive) {
          const at = self.parentDir(path, "mkdir");
          if (self.nodes.has(at)) throw fsError("EEXIST", "mkdir", path);
          self.write();
          self.nodes.set(at, { kind: "dir", mode: options.mode ?? 0o755, mtimeMs: self.clock.now() });
          return;
        }
        if (self.get(path)?.kind === "dir") return;
        self.write();
        self.mkdirs(self.resolveLinks(path, true), options.mode);
      },
      mkdtemp(prefix) {
        const path = self.abs(`${prefix}${(++self.temp).toString(36).padStart(6, "0")}`);
        self.parentDir(path, "mkdtemp");
        self.write();
        self.mkdirs(path, 0o700);
        return path;
      },
      stat: (path) => {
        const node = self.get(path);
        return node && info(node);
      },
      lstat: (path) => {
        const node = self.get(path, false);
        return node && info(node);
      },
      exists: (path) => self.get(path) !== undefined,
      readdir(path) {
        const node = self.get(path);
        if (!node) throw fsError("ENOENT", "scandir", path);
        if (node.kind !== "dir") throw fsError("ENOTDIR", "scandir", path);
        const dir = self.resolveLinks(path, true);
        const prefix = dir === "/" ? "/" : `${dir}/`;
        return [...self.nodes.keys()].filter((k) => k !== dir && k.startsWith(prefix) && !k.slice(prefix.length).includes("/")).map((k) => k.slice(prefix.length));
      },
      readlink(path) {
        const node = self.get(path, false);
        if (!node) throw fsError("ENOENT", "readlink", path);
        if (node.kind !== "link") throw fsError("EINVAL", "readlink", path);
        return node.target;
      },
      realpath(path) {
        const real = self.resolveLinks(path, true);
        if (!self.nodes.has(real)) throw fsError("ENOENT", "realpath", path);
        return real;
      },
      rename(from, to) {
        const a = self.resolveLinks(from, false);
        if (!self.nodes.has(a)) throw fsError("ENOENT", "rename", from);
        const b = self.parentDir(to, "rename");
        const existing = self.nodes.get(b);
        if (existing?.kind === "dir" && [...self.nodes.keys()].some((k) => k.startsWith(`${b}/`))) throw fsError("ENOTEMPTY", "rename", to);
        self.write();
        const moved = [...self.nodes.entries()].filter(([k]) => k === a || k.startsWith(`${a}/`));
        for (const [k] of moved) self.nodes.delete(k);
        self.nodes.delete(b);
        for (const [k, v] of moved) self.nodes.set(b + k.slice(a.length), v);
      },
      remove(path, options = {}) {
        const p = self.resolveLinks(path, false);
        const node = self.nodes.get(p);
        if (!node) {
          if (options.force) return;
          throw fsError("ENOENT", "rm", path);
        }
        const inside = [...self.nodes.keys()].filter((k) => k.startsWith(`${p}/`));
        if (node.kind === "dir" && !options.recursive) throw fsError(inside.length ? "ENOTEMPTY" : "EISDIR", "rm", path);
        self.write();
        self.nodes.delete(p);
        for (const k of inside) self.nodes.delete(k);
      },
      removeDir(path) {
        const p = self.resolveLinks(path, false);
        const node = self.nodes.get(p);
        if (!node) throw fsError("ENOENT", "rmdir", path);
        if (node.kind !== "dir") throw fsError("ENOTDIR", "rmdir", path);
        if ([...self.nodes.keys()].some((k) => k.startsWith(`${p}/`))) throw fsError("ENOTEMPTY", "rmdir", path);
        self.write();
        self.nodes.delete(p);
      },
      link(from, to) {
        const a = self.resolveLinks(from, false);
        const node = self.nodes.get(a);
        if (!node) throw fsError("ENOENT", "link", from);
        if (node.kind === "dir") throw fsError("EPERM", "link", from);
        const b = self.parentDir(to, "link");
        if (self.nodes.has(b)) throw fsError("EEXIST", "link", to);
        self.write();
        self.nodes.set(b, node);
      },
      readdirTypes(path): DirEntry[] {
        const dir = self.resolveLinks(path, true);
        return this.readdir(path).map((name) => {
          const kind = self.nodes.get(`${dir === "/" ? "" : dir}/${name}`)?.kind;
          return { name, isFile: () => kind === "file", isDirectory: () => kind === "dir", isSymbolicLink: () => kind === "link" };
        });
      },
      lstatExact: (path) => {
        const node = self.get(path, false);
        return node && exactInfo(node);
      },
      statExact: (path) => {
        const node = self.get(path);
        return node && exactInfo(node);
      },
      readlinkBytes(path) {
        return new TextEncoder().encode(this.readlink(path));
      },
      writeBytes(path, data, options = {}) {
        this.writeText(path, new TextDecoder().decode(data), options);
      },
      symlink(target, path) {
        const p = self.parentDir(path, "symlink");
        if (self.nodes.has(p)) throw fsError("EEXIST", "symlink", path);
        self.write();
        self.nodes.set(p, { kind: "link", target, mode: 0o777, mtimeMs: self.clock.now() });
      },
      copyFile(from, to) {
        this.writeText(to, this.readText(from));
      },
      chmod(path, mode) {
        const node = self.get(path);
        if (!node) throw fsError("ENOENT", "chmod", path);
        self.write();
        node.mode = mode & 0o7777;
      },
      fstat(fd) {
        // phaseloop's own stdout and stderr lead nowhere in memory
        throw fsError("EBADF", "fstat", String(fd));
      },
      openRead: (path, options) => openReadIn(self.files, path, options),
      watch: (path, onChange) => self.watches.watch(self.files, path, onChange),
      copy: (from, to) => copyIn(self.files, (target, path) => self.symlink(target, path), from, to),
      writeDescriptor(fd, data, offset) {
        self.printed[fd] = (self.printed[fd] ?? "") + new TextDecoder().decode(data.subarray(offset));
        return data.length - offset;
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
