/**
 * Reading a run directory back for `status` and `logs`: the run ids, the lock,
 * and events.jsonl read as a stream (a chunk at a time, never the whole file)
 * or followed as it grows. A crash can leave a torn last line; it is skipped,
 * and a follower waits for the rest of it. Files and the clock are the host's
 * the caller gives.
 */
import { join } from "node:path";
import type { Host, HostFiles } from "../host/host.ts";
import { checkEvent } from "../run/check-run-state.ts";
import type { RunEvent } from "../run/run-events.ts";

export function runsDir(workdir: string): string {
  return join(workdir, ".phaseloop", "runs");
}

export function runDir(workdir: string, runId: string): string {
  return join(runsDir(workdir), runId);
}

export interface LockInfo {
  pid: number | null;
  run: string | null;
  started_at: string | null;
  hostname: string | null;
}

/** The workdir's lock, read leniently: a missing or garbled lock is no lock. */
export async function readLock(workdir: string, files: HostFiles): Promise<LockInfo | null> {
  let text: string;
  try {
    text = files.readText(join(workdir, ".phaseloop", "lock"));
  } catch {
    return null;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // An older or hand-written lock: "PID RUN_ID" on one line.
    const [pid, run] = text.trim().split(/\s+/);
    const n = Number(pid);
    return Number.isInteger(n) && n > 0 ? { pid: n, run: run ?? null, started_at: null, hostname: null } : null;
  }
  if (data === null || typeof data !== "object") return null;
  const record = data as Record<string, unknown>;
  const str = (...keys: string[]): string | null => {
    for (const key of keys) if (typeof record[key] === "string") return record[key] as string;
    return null;
  };
  const pid = typeof record.pid === "number" && Number.isInteger(record.pid) && record.pid > 0 ? record.pid : null;
  return { pid, run: str("run_id", "runId", "run"), started_at: str("started_at", "startedAt", "start_time", "started"), hostname: str("hostname", "host") };
}

/** What reading a run folder back asks of the host: its files, its clock, and whether a process is alive. */
export type RunReadHost = Pick<Host, "files" | "clock" | "processes">;

/** Whether a live process on this host holds the lock for this run (the host's test of liveness knows zombies). */
export async function isRunLive(workdir: string, runId: string, hostname: string | null, host: Pick<Host, "files" | "processes">): Promise<boolean> {
  const lock = await readLock(workdir, host.files);
  if (lock === null || lock.pid === null || lock.run !== runId) return false;
  // A lock taken on another host cannot be checked from here; trust it.
  if (lock.hostname !== null && hostname !== null && lock.hostname !== hostname) return true;
  return host.processes.alive(lock.pid);
}

/** Reads JSON objects from complete lines of a growing buffer; keeps the unfinished tail. */
export class EventLineSplitter {
  private pending = "";
  private readonly decoder = new TextDecoder();
  /** Lines that were not a JSON event (skipped). */
  malformed = 0;

  push(chunk: Uint8Array, onEvent: (event: RunEvent) => void): void {
    const text = this.pending + this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const end = text.indexOf("\n", start);
      if (end === -1) break;
      this.parse(text.slice(start, end), onEvent);
      start = end + 1;
    }
    this.pending = text.slice(start);
  }

  /** The end of the file: a final line without its newline is used if whole, else dropped as torn. */
  end(onEvent: (event: RunEvent) => void): { torn: boolean } {
    const rest = this.pending + this.decoder.decode();
    this.pending = "";
    if (rest.trim() === "") return { torn: false };
    const before = this.malformed;
    this.parse(rest, onEvent);
    if (this.malformed > before) {
      this.malformed = before;
      return { torn: true };
    }
    return { torn: false };
  }

  /** Bytes held back waiting for a newline. */
  get pendingLength(): number {
    return this.pending.length;
  }

  private parse(line: string, onEvent: (event: RunEvent) => void): void {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      this.malformed += 1;
      return;
    }
    // a line that is not a whole event of its type is skipped, so no reader meets a field of the wrong kind
    if (checkEvent(value, "") === undefined) onEvent(value as RunEvent);
    else this.malformed += 1;
  }
}

export interface ReadEventsResult {
  /** Whether the file ended in a torn (partly written) line, which was skipped. */
  torn: boolean;
  /** Lines in the middle of the file that were not events. */
  malformed: number;
  /** Bytes read: where a follower carries on. */
  bytes: number;
  /** Why the file could not be read at all (it is a directory, say); nothing was delivered. */
  problem?: string;
}

const CHUNK = 256 * 1024;

/** Streams events.jsonl to `onEvent`, a chunk at a time. A missing file is an empty log. */
export async function readEvents(path: string, onEvent: (event: RunEvent) => void, files: HostFiles): Promise<ReadEventsResult> {
  let handle;
  try {
    const info = files.lstat(path);
    if (info === undefined) return { torn: false, malformed: 0, bytes: 0 };
    if (!info.isFile()) return { torn: false, malformed: 0, bytes: 0, problem: `is ${info.isDirectory() ? "a directory" : info.isSymbolicLink() ? "a symbolic link" : "a special file"}, not a file` };
    handle = await files.openRead(path);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return { torn: false, malformed: 0, bytes: 0 };
    return { torn: false, malformed: 0, bytes: 0, problem: `cannot be read: ${(error as Error).message}` };
  }
  const splitter = new EventLineSplitter();
  const buffer = new Uint8Array(CHUNK);
  let bytes = 0;
  try {
    for (;;) {
      const bytesRead = await handle.read(buffer, 0, CHUNK, bytes);
      if (bytesRead === 0) break;
      bytes += bytesRead;
      splitter.push(buffer.subarray(0, bytesRead), onEvent);
    }
  } finally {
    await handle.close();
  }
  const { torn } = splitter.end(onEvent);
  return { torn, malformed: splitter.malformed, bytes };
}

export interface FollowOptions {
  /** Stops following (SIGINT). */
  signal?: AbortSignal;
  /** How often to look for new lines (ms, default 200). */
  pollMs?: number;
  /**
   * Asked whenever the log has not grown for a while (about every `idleCheckMs`):
   * false stops the follow, for a run that crashed or was interrupted and will
   * write nothing more. Without it, following goes on until run.finished.
   */
  isLive?: () => Promise<boolean>;
  idleCheckMs?: number;
}

export type FollowEnd = "finished" | "aborted" | "not_running";

/**
 * Streams events.jsonl from the start and keeps reading as it grows, until a
 * `run.finished` event, the signal, or `isLive` saying nobody will write more.
 * Polls the file size: fs.watch misses appends on some file systems.
 */
export async function followEvents(path: string, onEvent: (event: RunEvent) => void, host: Pick<Host, "files" | "clock">, options: FollowOptions = {}): Promise<FollowEnd> {
  const { files, clock } = host;
  const pollMs = options.pollMs ?? 200;
  const idleCheckMs = options.idleCheckMs ?? 2000;
  const splitter = new EventLineSplitter();
  const buffer = new Uint8Array(CHUNK);
  let offset = 0;
  let finished = false;
  let idleSince = clock.now();
  const deliver = (event: RunEvent): void => {
    if (finished) return;
    onEvent(event);
    if (event.type === "run.finished") finished = true;
  };
  for (;;) {
    if (options.signal?.aborted) return "aborted";
    let size = 0;
    try {
      size = files.stat(path)?.size ?? 0;
    } catch {
      size = 0;
    }
    // A log replaced by a shorter one (a new file): start again from the top.
    if (size < offset) offset = 0;
    if (size > offset) {
      const handle = await files.openRead(path);
      try {
        while (offset < size) {
          const bytesRead = await handle.read(buffer, 0, Math.min(CHUNK, size - offset), offset);
          if (bytesRead === 0) break;
          offset += bytesRead;
          splitter.push(buffer.subarray(0, bytesRead), deliver);
          if (finished) return "finished";
        }
      } finally {
        await handle.close();
      }
      idleSince = clock.now();
    } else if (options.isLive !== undefined && clock.now() - idleSince >= idleCheckMs) {
      if (!(await options.isLive())) {
        // Nothing more will come: a last line without its newline is whole or torn for good.
        splitter.end(deliver);
        return finished ? "finished" : "not_running";
      }
      idleSince = clock.now();
    }
    await clock.sleep(pollMs, options.signal);
  }
}
