/**
 * The runs of a workdir in a few facts each, for `phaseloop runs`: read from
 * run.json, the end of events.jsonl (a finished run's last event has its
 * totals) and, for a run that has not finished, its checkpoint. No log is
 * read whole, so a workdir of long runs lists at once.
 */
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import type { RunEvent, RunOutcome } from "../run/run-events.ts";
import { readCheckpointFile } from "../runtime/checkpoint-file.ts";
import { machineName } from "../runtime/run-lock.ts";
import { listRunIds } from "../runtime/run-store.ts";
import { isRunLive, runDir, type RunReadHost } from "./run-log.ts";

export interface RunListEntry {
  run: string;
  pipeline: string | null;
  file: string | null;
  started_at: string | null;
  duration_ms: number | null;
  /** How it ended, or where it stands: running, awaiting answer, interrupted, crashed. */
  outcome: RunOutcome | "running" | "awaiting answer" | "interrupted" | "crashed";
  reason: string | null;
  exit_code: number | null;
  iterations: number | null;
  tokens: number;
  cost_usd: number;
  /** The run's folder. */
  dir: string;
}

/** Newest first; `now` (the clock's, unless given) is when a running run's duration ends. */
export async function listRuns(workdir: string, on: RunReadHost, now = on.clock.now()): Promise<RunListEntry[]> {
  const ids = (await listRunIds(workdir, on.files)).reverse();
  const host = machineName();
  return Promise.all(ids.map((id) => readEntry(workdir, id, host, now, on)));
}

type Finished = Extract<RunEvent, { type: "run.finished" }>;

async function readEntry(workdir: string, runId: string, host: string | null, now: number, on: RunReadHost): Promise<RunListEntry> {
  const { files } = on;
  const dir = runDir(workdir, runId);
  const info = readJson<{ pipeline?: unknown; file?: unknown; started_at?: unknown }>(files, join(dir, "run.json"));
  const last = await lastEvents(join(dir, "events.jsonl"), files);
  const finished = [...last].reverse().find((e): e is Finished => e.type === "run.finished");
  const interrupted = last.at(-1)?.type === "run.interrupted";
  // an ask phase's question with no answer after it: the run saved itself to wait for one
  const asked = [...last].reverse().find((e) => e.type === "question.asked" || e.type === "question.answered" || e.type === "run.resumed");
  const awaiting = asked?.type === "question.asked";
  const startedAt = typeof info?.started_at === "string" ? info.started_at : null;
  const entry: RunListEntry = {
    run: runId,
    pipeline: typeof info?.pipeline === "string" ? info.pipeline : null,
    file: typeof info?.file === "string" ? info.file : null,
    started_at: startedAt,
    duration_ms: null,
    outcome: "crashed",
    reason: null,
    exit_code: null,
    iterations: null,
    tokens: 0,
    cost_usd: 0,
    dir,
  };
  if (finished !== undefined && last.at(-1) === finished) {
    return { ...entry, duration_ms: finished.elapsed_ms, outcome: finished.outcome, reason: finished.reason.message || finished.reason.code, exit_code: finished.exit_code, iterations: finished.iterations, tokens: finished.tokens, cost_usd: finished.cost_usd };
  }
  const snapshot = readSnapshot(dir, files);
  const live = await isRunLive(workdir, runId, host, on);
  const started = startedAt === null ? NaN : Date.parse(startedAt);
  return {
    ...entry,
    outcome: live ? "running" : awaiting ? "awaiting answer" : interrupted ? "interrupted" : "crashed",
    duration_ms: live && Number.isFinite(started) ? Math.max(0, now - started) : (snapshot?.elapsedMs ?? null),
    iterations: snapshot?.iteration ?? null,
    tokens: snapshot?.tokens ?? 0,
    cost_usd: snapshot?.costUsd ?? 0,
    exit_code: live ? null : awaiting ? 3 : 130,
  };
}

function readJson<T>(files: HostFiles, path: string): T | undefined {
  try {
    return JSON.parse(files.readText(path)) as T;
  } catch {
    return undefined;
  }
}

function readSnapshot(dir: string, files: HostFiles): { iteration?: number; tokens?: number; costUsd?: number; elapsedMs?: number } | undefined {
  const text = readCheckpointFile(join(dir, "state.json"), files);
  if (text === undefined) return undefined;
  try {
    const s = (JSON.parse(text) as { snapshot?: Record<string, unknown> }).snapshot ?? {};
    const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
    return { iteration: num(s.iteration), tokens: num(s.tokens), costUsd: num(s.costUsd), elapsedMs: num(s.elapsedMs) };
  } catch {
    return undefined;
  }
}

const TAIL = 16 * 1024;

/** The last few events of a log (its end only is read). */
export async function lastEvents(path: string, files: HostFiles): Promise<RunEvent[]> {
  let handle;
  try {
    handle = await files.openRead(path);
  } catch {
    return [];
  }
  try {
    const { size } = await handle.stat();
    const start = Math.max(0, size - TAIL);
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    const lines = buffer.toString("utf8").split("\n");
    if (start > 0) lines.shift(); // a line cut by the window
    const out: RunEvent[] = [];
    for (const line of lines) {
      if (line.trim() === "") continue;
      try {
        const e = JSON.parse(line) as RunEvent;
        if (e && typeof e === "object" && typeof e.type === "string") out.push(e);
      } catch {
        // a torn line from a crash
      }
    }
    return out;
  } finally {
    await handle.close();
  }
}
