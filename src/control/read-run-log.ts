/**
 * A run's event log a page at a time. The cursor is opaque to callers: it
 * holds the byte offset in events.jsonl where the next page starts (always a
 * line's start), so a page costs what it reads, however long the log, and a
 * cursor taken while the run goes on picks up exactly the events written since.
 */
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { Buffer } from "node:buffer";
import { checkEvent } from "../run/check-run-state.ts";
import type { RunEvent } from "../run/run-events.ts";
import { runDir } from "../records/run-log.ts";
import { ControlError } from "./control-error.ts";
import { findRun } from "./read-runs.ts";
import { resolveWorkdir } from "./workdir-path.ts";

export interface ReadRunLogOptions {
  /** Where to go on from: the `cursor` of the page before; the log's start without one. */
  cursor?: string;
  /** Events at most in the page (default 100, at most 1000). */
  limit?: number;
  /** Only the events of this phase. */
  phase?: string;
  /** Files: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export interface RunLogPage {
  run: string;
  events: RunEvent[];
  /** Hand it back to read the next page (or, at the end, what the run writes later). */
  cursor: string;
  /** Whether the log holds more events after this page now. */
  more: boolean;
}

export const DEFAULT_LOG_LIMIT = 100;
export const MAX_LOG_LIMIT = 1000;
const CHUNK = 256 * 1024;

export function encodeCursor(offset: number): string {
  return Buffer.from(`events.jsonl@${offset}`).toString("base64url");
}

function decodeCursor(cursor: string): number {
  const text = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, "base64url").toString("utf8") : "";
  const m = /^events\.jsonl@(\d{1,15})$/.exec(text);
  if (!m) throw new ControlError("BAD_CURSOR", `the cursor "${cursor}" is not one read_run_log handed out`, { hint: "leave the cursor out to read from the start of the log" });
  return Number(m[1]);
}

export async function readRunLog(workdir: string, runId: string, options: ReadRunLogOptions = {}): Promise<RunLogPage> {
  const host = options.host ?? nodeHost;
  const dir = resolveWorkdir(workdir, undefined, host.files);
  const id = await findRun(dir, runId, host);
  const limit = options.limit ?? DEFAULT_LOG_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LOG_LIMIT) throw new ControlError("BAD_ARGUMENT", `limit must be a whole number from 1 to ${MAX_LOG_LIMIT}, got ${String(limit)}`);
  if (options.phase !== undefined && (typeof options.phase !== "string" || options.phase === "")) throw new ControlError("BAD_ARGUMENT", "phase must be a phase name");
  const start = options.cursor === undefined ? 0 : decodeCursor(options.cursor);
  const path = join(runDir(dir, id), "events.jsonl");
  let handle;
  try {
    handle = await host.files.openRead(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" && start === 0) return { run: id, events: [], cursor: encodeCursor(0), more: false };
    throw new ControlError("RUN_STATE_INVALID", `${path}: cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    const { size } = await handle.stat();
    if (start > size) throw new ControlError("BAD_CURSOR", `the cursor points past the end of run ${id}'s log`, { hint: "leave the cursor out to read from the start of the log" });
    if (start > 0) {
      const before = Buffer.alloc(1);
      await handle.read(before, 0, 1, start - 1);
      if (before[0] !== 0x0a) throw new ControlError("BAD_CURSOR", `the cursor does not point at an event of run ${id}'s log`, { hint: "leave the cursor out to read from the start of the log" });
    }
    // one event past the page says whether there is more; the cursor stays after the page's last
    const events: RunEvent[] = [];
    let pageEnd = start;
    let more = false;
    let carry = Buffer.alloc(0);
    let readAt = start;
    scan: while (readAt < size) {
      const chunk = Buffer.alloc(Math.min(CHUNK, size - readAt));
      const bytesRead = await handle.read(chunk, 0, chunk.length, readAt);
      if (bytesRead === 0) break;
      readAt += bytesRead;
      const buffer = carry.length ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
      const base = readAt - buffer.length; // the file offset of buffer[0]
      let lineStart = 0;
      for (;;) {
        const nl = buffer.indexOf(0x0a, lineStart);
        if (nl === -1) break;
        const event = parseLine(buffer.subarray(lineStart, nl));
        lineStart = nl + 1;
        if (event && (options.phase === undefined || (event as { phase?: unknown }).phase === options.phase)) {
          if (events.length === limit) {
            more = true;
            break scan;
          }
          events.push(event);
        }
        pageEnd = base + lineStart;
      }
      carry = Buffer.from(buffer.subarray(lineStart));
    }
    return { run: id, events, cursor: encodeCursor(pageEnd), more };
  } finally {
    await handle.close();
  }
}

function parseLine(line: Buffer): RunEvent | undefined {
  if (line.length === 0) return undefined;
  try {
    const value: unknown = JSON.parse(line.toString("utf8"));
    return checkEvent(value, "") === undefined ? (value as RunEvent) : undefined;
  } catch {
    return undefined; // a torn or damaged line: status reports those
  }
}
