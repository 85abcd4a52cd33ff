/**
 * Waiting for a run without polling it hard: the run folder and the
 * `.phaseloop` folder (where the lock comes and goes) are watched, and a slow
 * timer catches what a watch can miss (a run killed with -9 leaves no trace
 * but a dead pid). Each look reads the end of the event log and the lock
 * only; the full status is read once, at the end.
 */
import { join } from "node:path";
import type { Host, Watcher } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { lastEvents } from "../records/list-runs.ts";
import { isRunLive, runDir } from "../records/run-log.ts";
import type { RunStatus } from "../records/run-status.ts";
import type { RunEvent } from "../run/run-events.ts";
import { machineName } from "../runtime/run-lock.ts";
import { ControlError } from "./control-error.ts";
import { findRun, getRun } from "./read-runs.ts";
import { resolveWorkdir } from "./workdir-path.ts";

/** Why the wait ended: the run finished, asks a question, stopped running (interrupted, crashed), the time passed, or the caller gave up. */
export type WaitEnd = "finished" | "question" | "stopped" | "timeout" | "aborted";

export interface WaitResult {
  run: string;
  end: WaitEnd;
  /** Where the run stands now (what `status --json` says). */
  status: RunStatus;
}

export interface WaitProgress {
  run: string;
  /** The last event's number: it grows as the run goes. */
  seq: number;
  iteration: number | null;
  phase: string | null;
  /** The last event in words. */
  message: string;
}

export interface WaitOptions {
  /** How long to wait at most (default 5 minutes). */
  timeoutMs?: number;
  /** Called when the run has moved on (a new event). */
  onProgress?: (progress: WaitProgress) => void;
  signal?: AbortSignal;
  /** How often to look when no watch fires (default 1 s). */
  checkEveryMs?: number;
  /** Files and the clock: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export const DEFAULT_WAIT_MS = 5 * 60_000;

export async function waitForRun(workdir: string, runId: string, options: WaitOptions = {}): Promise<WaitResult> {
  const on = options.host ?? nodeHost;
  const { clock } = on;
  const dir = resolveWorkdir(workdir, undefined, on.files);
  const id = await findRun(dir, runId, on);
  const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new ControlError("BAD_ARGUMENT", `the timeout must be a number of milliseconds of at least 0, got ${String(timeoutMs)}`);
  const host = machineName();
  const folder = runDir(dir, id);
  let lastSeq = -1;

  /** One look: how the wait ends now, or undefined to go on waiting. */
  const look = async (): Promise<WaitEnd | undefined> => {
    const tail = await lastEvents(join(folder, "events.jsonl"), on.files);
    const last = tail.at(-1);
    if (last && last.seq !== lastSeq) {
      lastSeq = last.seq;
      options.onProgress?.(progressOf(id, tail));
    }
    // a finished run's process still writes its summary and lets go of the lock: the wait ends when it has
    const live = await isRunLive(dir, id, host, on);
    // (a live run asking at its terminal waits for the person there: only they can answer it)
    if (live) return undefined;
    if (last?.type === "run.finished") return "finished";
    const status = await getRun(dir, id, on);
    if (status.outcome !== null) return "finished";
    return status.state === "awaiting answer" ? "question" : "stopped";
  };

  const end = await new Promise<WaitEnd>((resolveEnd, rejectEnd) => {
    const watchers: Watcher[] = [];
    let settled = false;
    let looking = false;
    let again = false;
    const finish = (how: WaitEnd | Error): void => {
      if (settled) return;
      settled = true;
      for (const w of watchers) w.close();
      clock.clearTimer(timer);
      clock.clearTimer(ticker);
      options.signal?.removeEventListener("abort", onAbort);
      if (how instanceof Error) rejectEnd(how);
      else resolveEnd(how);
    };
    const check = (): void => {
      if (settled) return;
      if (looking) {
        again = true; // a change while looking: look once more after
        return;
      }
      looking = true;
      look().then(
        (how) => {
          looking = false;
          if (how) finish(how);
          else if (again) {
            again = false;
            check();
          }
        },
        (error: unknown) => {
          looking = false;
          finish(error instanceof Error ? error : new Error(String(error)));
        },
      );
    };
    const onAbort = (): void => finish("aborted");
    const timer = clock.setTimer(() => finish("timeout"), timeoutMs);
    const every = options.checkEveryMs ?? 1000;
    const tick = (): void => {
      ticker = clock.setTimer(tick, every);
      check();
    };
    let ticker = clock.setTimer(tick, every);
    if (options.signal?.aborted) return finish("aborted");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    for (const path of [folder, join(dir, ".phaseloop")]) {
      try {
        watchers.push(on.files.watch(path, () => check())); // after an error, the slow timer still looks
      } catch {
        // a folder that cannot be watched: the slow timer looks
      }
    }
    check();
  });
  return { run: id, end, status: await getRun(dir, id, on) };
}

function progressOf(run: string, tail: RunEvent[]): WaitProgress {
  const last = tail.at(-1)!;
  let iteration: number | null = null;
  let phase: string | null = null;
  for (let i = tail.length - 1; i >= 0 && (iteration === null || phase === null); i--) {
    const e = tail[i] as { iteration?: unknown; phase?: unknown };
    if (iteration === null && typeof e.iteration === "number") iteration = e.iteration;
    if (phase === null && typeof e.phase === "string") phase = e.phase;
  }
  return { run, seq: last.seq, iteration, phase, message: describe(last) };
}

function describe(e: RunEvent): string {
  switch (e.type) {
    case "phase.finished":
      return `iteration ${e.iteration}: ${e.phase} ${e.status}${e.message ? `: ${e.message}` : ""}`;
    case "phase.started":
      return `iteration ${e.iteration}: ${e.phase} started`;
    case "iteration.started":
      return `iteration ${e.iteration} started`;
    case "question.asked":
      return `${e.phase} asks: ${e.question}`;
    case "question.answered":
      return `${e.phase} answered: ${e.answer}`;
    case "run.finished":
      return `run ${e.outcome}: ${e.reason.message || e.reason.code}`;
    case "run.interrupted":
      return `run interrupted (${e.signal})`;
    default:
      return e.type;
  }
}
