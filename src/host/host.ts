/**
 * The host: everything the shell asks of the world — files, processes, git,
 * the clock and the environment — through one interface, carried in the run's
 * context. `node-host.ts` is the real one (the only module that touches
 * `node:fs`, `node:child_process` or reads the clock); `memory-host.ts` is an
 * in-memory one for tests, with a fake clock, scripted processes and a crash
 * injected at the N-th write.
 *
 * Files follow the synchronous calls of `node:fs` the shell already made:
 * a failure throws an error with the same `code` (ENOENT, EEXIST, ENOTDIR…),
 * and reading what is not there is an error, not an answer, except for `stat`
 * and `lstat`, which answer undefined.
 */
import type { ReadHost } from "../pipeline/load-pipeline.ts";
import type { SourceRead } from "./read-source-file.ts";

export interface ProcessSpec {
  /** argv (no shell), or a string run by `sh -c`. */
  command: string[] | string;
  cwd: string;
  env: Record<string, string | undefined>;
  /** Text written to stdin, then closed. Without it stdin is closed from the start. */
  stdin?: string;
  timeoutMs?: number;
  /** Kill when neither stdout nor stderr printed anything for this long. */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
  stdoutFile?: string;
  stderrFile?: string;
  /** Each line; returning "result" says the program printed its terminal result: it gets `resultGraceMs`, then it is ended. */
  onLine?: (stream: "stdout" | "stderr", line: string) => unknown;
  /** Grace period between SIGTERM and SIGKILL. Default 2 s. */
  killGraceMs?: number;
  /** How long a program that printed its terminal result may go on. Default 2 s. */
  resultGraceMs?: number;
  /**
   * The phase this process is (its run's id and its phase folder): when it is stopped and when
   * it has ended, the processes it left behind are ended too, those that shed their
   * environment and process group included (orphans.ts).
   */
  phase?: {
    runId: string;
    phaseDir: string;
    /**
     * Its processes are in a PID namespace of their own (phaseloop's Linux fence), which ends
     * them all with it: nothing is looked for after it ended by itself, only when it is stopped
     * (the namespace's processes die a moment after it, and a stopped phase leaves none).
     */
    contained?: boolean;
  };
}

/** A finished process, whatever happened: failures are results, not exceptions. */
export interface ProcessResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  idleTimedOut: boolean;
  aborted: boolean;
  /** The program was ended after the grace that followed its terminal result. */
  endedAfterResult?: boolean;
  /** The program could not be started ("command not found: x"). */
  spawnError?: string;
  durationMs: number;
  /** stdout, capped (the beginning is kept up to STDOUT_CAP, then the tail). */
  stdout: string;
  stdoutTail: string;
  stderrTail: string;
  /** Whether anything was written to stdoutFile or stderrFile (they are created on first output). */
  wroteLogs: boolean;
  pid?: number;
}

/** What `stat` and `lstat` tell. */
export interface FileInfo {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  size: number;
  mode: number;
  mtimeMs: number;
  // what change measurement and its caches compare: a file's identity and its last change
  ctimeMs: number;
  /** The file's inode (a log replaced by another file has another). */
  ino: number;
  dev: number;
  nlink: number;
  /** Its owner's user id. */
  uid?: number;
}

/** A directory's entry with its type, as listed (no stat of each). */
export interface DirEntry {
  name: string;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/** A stat to the nanosecond (what `git status` itself compares). */
export interface ExactFileInfo {
  mode: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  isDirectory(): boolean;
}

/** An open file, written in order; `sync` makes what was written durable. */
export interface FileHandle {
  write(data: string): void;
  /** Cut the file to `length` bytes (0: empty it). */
  truncate(length?: number): void;
  sync(): void;
  close(): void;
}

export interface OpenOptions {
  /** Refuse to follow a symbolic link in the last component (O_NOFOLLOW). */
  noFollow?: boolean;
  /** Whatever is in the file's place that is not a plain file is removed first, then the file is opened again. */
  replaceNonFile?: boolean;
}

/** A pipeline or prompt file the user named: its text, undefined when missing, `problem` when it cannot be a source. */
export type { SourceRead };

export interface HostFiles {
  /** The file's text (UTF-8); throws ENOENT when missing. */
  readText(path: string): string;
  /** The file's bytes; throws ENOENT when missing. */
  readBytes(path: string): Uint8Array;
  /** Cut the file to `length` bytes. */
  truncate(path: string, length: number): void;
  /** A file the user named, read as a pipeline or prompt is (only a regular file, up to a size cap). */
  readSource(path: string): SourceRead;
  /** Create or replace the file with `data`; `exclusive` fails with EEXIST when the file exists. */
  writeText(path: string, data: string, options?: { exclusive?: boolean; mode?: number }): void;
  /**
   * Replace the file so that readers see the old or the new content, never a
   * torn one (a temporary file, then rename). `durable` adds fsync.
   */
  writeAtomic(path: string, data: string, durable?: boolean): void;
  appendText(path: string, data: string): void;
  /** Open for appending (created when missing). */
  openAppend(path: string, options?: OpenOptions): FileHandle;
  /** Open for writing from the start (created when missing, emptied when present). */
  openWrite(path: string, options?: OpenOptions): FileHandle;
  /** Make the directory and its parents (no error when it exists). */
  /** With `exclusive`, only this directory, whose parent must exist: EEXIST when anything is in its place (a link too). */
  mkdir(path: string, options?: { mode?: number; exclusive?: boolean }): void;
  /** A new directory named `prefix` + random characters; its path. */
  mkdtemp(prefix: string): string;
  stat(path: string): FileInfo | undefined;
  lstat(path: string): FileInfo | undefined;
  exists(path: string): boolean;
  readdir(path: string): string[];
  readlink(path: string): string;
  /** The path with every symbolic link on the way resolved; throws ENOENT when it does not exist. */
  realpath(path: string): string;
  rename(from: string, to: string): void;
  /** Remove a file (or, `recursive`, a directory and what it holds); `force`: no error when missing. */
  remove(path: string, options?: { recursive?: boolean; force?: boolean }): void;
  /** Remove an empty directory (rmdir): ENOTEMPTY when it holds anything, ENOENT when missing. */
  removeDir(path: string): void;
  /** A second name for a file (a hard link); EEXIST when `to` exists: an atomic create-if-absent. */
  link(from: string, to: string): void;
  /** Open for reading at any offset, asynchronously: a big log is read a chunk at a time. `noFollow`: a link in the last component is refused (ELOOP). */
  openRead(path: string, options?: { noFollow?: boolean }): Promise<ReadHandle>;
  /** Watch a file or folder without keeping phaseloop alive: `onChange` at each change (a hint: look again); after an error it is closed and `onError` told. Throws (ENOENT…) when it cannot. */
  watch(path: string, onChange: () => void, onError?: () => void): Watcher;
  /** Copy a file or a folder with what it holds (modes kept), over what is there. */
  copy(from: string, to: string): void;
  /** Write `data` from `offset` to an open descriptor (1: stdout, 2: stderr); the bytes written (EAGAIN when it would block). */
  writeDescriptor(fd: number, data: Uint8Array, offset: number): number;
  // what change measurement reads and restores
  /** A directory's entries with their types. */
  readdirTypes(path: string): DirEntry[];
  /** `lstat` to the nanosecond; undefined when missing. */
  lstatExact(path: string): ExactFileInfo | undefined;
  /** `stat` to the nanosecond; undefined when missing. */
  statExact(path: string): ExactFileInfo | undefined;
  /** A symbolic link's target as bytes. */
  readlinkBytes(path: string): Uint8Array;
  /** Create or replace the file with these bytes. */
  writeBytes(path: string, data: Uint8Array, options?: { mode?: number }): void;
  symlink(target: string, path: string): void;
  copyFile(from: string, to: string): void;
  chmod(path: string, mode: number): void;
  /** What an open descriptor of phaseloop's own (1: stdout, 2: stderr) is; throws when it is closed. */
  fstat(fd: number): FileInfo;
  /**
   * Watch a folder's entries (created, removed, moved, written, mode changed):
   * `onEvent` with the entry's name (null when the event names none), `onError`
   * when the watch is lost. Absent where a folder cannot be watched this way.
   */
  watchEntries?(dir: string, onEvent: (name: string | null) => void, onError: () => void): Watcher;
}

/** A file open for reading (`openRead`). */
export interface ReadHandle {
  /** Read up to `length` bytes at `position` into `buffer` from `offset`; the bytes read (0 at the end). */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  stat(): Promise<FileInfo>;
  close(): Promise<void>;
}

/** A watch of a file or folder (`watch`). */
export interface Watcher {
  close(): void;
}

/** A program started to outlive phaseloop (`processes.detach`). */
export interface DetachSpec {
  command: string[];
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Its stdout and stderr appended to this file (created when missing); without it they go nowhere. */
  logFile?: string;
}

export interface Detached {
  pid: number | undefined;
  /** Its exit code when it ends while phaseloop lives (128 after a signal), or null when it could not be started. */
  exited: Promise<number | null>;
}

export interface HostProcesses {
  /** Run a program to its end (argv, or a string run by `sh -c`): failures are results, not exceptions. */
  run(spec: ProcessSpec): Promise<ProcessResult>;
  /** Whether the process `pid` is alive on this machine (a zombie is not). */
  alive(pid: number): boolean;
  /** End what an earlier life of run `runId` left running (a phaseloop killed with its phase); the pids it ended. */
  stopRun(runId: string): Promise<number[]>;
  /** Start a program in a session and process group of its own, with no terminal, that outlives phaseloop; throws when spawning throws. */
  detach(spec: DetachSpec): Detached;
  /** Run a short program and wait for it (stdin closed, stderr dropped): its stdout's bytes; `error` when it could not run or printed past `maxBuffer`. */
  runSync(argv: readonly string[], options?: { cwd?: string; maxBuffer?: number }): SyncRun;
}

/** A program run by `runSync`. */
export interface SyncRun {
  status: number | null;
  stdout: Uint8Array;
  error?: Error;
}

/** Finding programs as a spawn would, and asking them their version (what preflight needs). */
export interface HostPrograms {
  /** The program's path as a spawn from `cwd` would find it along `search` (a PATH), or null. */
  find(program: string, cwd: string, search: string): Promise<string | null>;
  /** The first line a version command prints, or null when it fails or takes too long; never rejects. */
  version(argv: readonly string[], cwd: string, env: Record<string, string | undefined>): Promise<string | null>;
}

export interface GitResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export interface HostGit {
  /** phaseloop's own git (hardened, its own PATH: see own-git.ts), run to its end. */
  run(args: string[], options: { cwd: string; input?: string; env?: Record<string, string | undefined>; maxBuffer?: number }): GitResult;
  /**
   * phaseloop's own git, not waited for: in a process group of its own (Ctrl-C at the terminal
   * does not stop a merge half done). Never rejects: a git that cannot start answers status null and why.
   */
  start(args: string[], options: { cwd: string; env?: Record<string, string | undefined> }): Promise<GitResult>;
  /** Git commands one after another while each succeeds, as `start` runs one (in one process: `sh -c`): their output together, the last one's status. */
  startAll(commands: string[][], options: { cwd: string; env?: Record<string, string | undefined> }): Promise<GitResult>;
}

export interface HostClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Milliseconds from an arbitrary start, never going back. */
  monotonic(): number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
  /** Run `fn` once the current work is done (setImmediate). */
  defer(fn: () => void): void;
}

export interface Host {
  readonly files: HostFiles;
  readonly processes: HostProcesses;
  readonly programs: HostPrograms;
  readonly git: HostGit;
  readonly clock: HostClock;
  /** The environment phaseloop was started with: read-only. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The current directory, absolute. */
  cwd(): string;
  /** phaseloop's own process id (names its temporary files). */
  readonly pid: number;
}

/** The clock's time as an ISO 8601 string (`at` and `updated_at` in the files). */
export function isoNow(clock: HostClock): string {
  return new Date(clock.now()).toISOString();
}

/** What loading a pipeline needs from the host: its files read as sources, and the current directory (or `cwd`). */
export function readHostOf(host: Host, cwd?: string): ReadHost {
  return {
    readFile: async (path: string) => host.files.readSource(path),
    get cwd() {
      return cwd ?? host.cwd();
    },
  };
}

/** An error as `node:fs` throws it: with its code. */
export function fsError(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: ${syscall} '${path}'`) as NodeJS.ErrnoException;
  error.code = code;
  error.syscall = syscall;
  error.path = path;
  return error;
}
