/**
 * A run started and resumed on a memory host, as start-run.ts and
 * resume-run.ts do it (the run folder appearing whole; the logs read through
 * their validators, repaired, the checkpoint's pending events replayed), with
 * lanes when the run has a task queue worked in parallel. The run's lock and
 * the sweep of an earlier life's processes are left out: they reach the real
 * disk and /proc, not the host.
 */
import { dirname } from "node:path";
import { expect } from "vitest";
import { isoNow, readHostOf } from "../../src/host/host.ts";
import { HostCrash, type MemoryHost } from "../../src/host/memory-host.ts";
import { compileLoaded } from "../../src/machine/compile-loaded.ts";
import { initialSnapshot } from "../../src/machine/initial-snapshot.ts";
import { toTaskState } from "../../src/machine/task-queue.ts";
import type { Machine, TaskItem } from "../../src/machine/types.ts";
import { loadPipeline } from "../../src/pipeline/load-pipeline.ts";
import type { Checkpoint } from "../../src/run/checkpoint.ts";
import { readCheckpoint, scanEventLog, scanIterationLog } from "../../src/run/read-run-state.ts";
import { openStore, replayPending } from "../../src/run/resume-run.ts";
import type { Reporter, RunEvent } from "../../src/run/run-events.ts";
import type { RunInfo } from "../../src/run/run-info.ts";
import { runLanes } from "../../src/run/run-lanes.ts";
import { createRunner, type RunResult } from "../../src/run/run-pipeline.ts";
import { lastJournalLine } from "../../src/runtime/checkpoint-file.ts";
import { RunStore, runPath } from "../../src/runtime/run-store.ts";

export const WORKDIR = "/home/user/project";
export const RUN_ID = "20260101-120000-abcd";
export const DIR = runPath(WORKDIR, RUN_ID);

/** The pipeline at `file` on the host, loaded and compiled with every pipeline it runs. */
export async function compileOn(host: MemoryHost, file: string): Promise<Machine> {
  const loaded = await loadPipeline(file, readHostOf(host, WORKDIR));
  expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  const compiled = compileLoaded(loaded);
  expect(compiled.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return compiled.machine!;
}

export interface RunSetup {
  machine: Machine;
  file: string;
  /** The task queue, read before the run starts. */
  tasks?: TaskItem[];
  /** Lanes: how many at once, merged into `main` in the workdir. */
  parallel?: number;
  signal?: AbortSignal;
  /** Every event the run reports, as it reports it. */
  seen?: RunEvent[];
}

const maxIterations = (m: Machine): number => (typeof m.limits.maxIterations === "number" ? m.limits.maxIterations : 0);

function info(host: MemoryHost, o: RunSetup): RunInfo {
  return { run_id: RUN_ID, pipeline: o.machine.name, file: o.file, hash: "h", version: "test", params: {}, workdir: WORKDIR, started_at: isoNow(host.clock), agents: {}, max_iterations: maxIterations(o.machine), measure: "off" };
}

const reporter = (o: RunSetup): Reporter => ({ onEvent: (e) => void o.seen?.push(e), close: async () => undefined });

function drive(host: MemoryHost, o: RunSetup, store: RunStore, snapshot: Checkpoint["snapshot"], seq: number, resumed: boolean, preface: Record<string, unknown>[], recordedIterations?: Set<number>): Promise<RunResult> {
  const signal = o.signal ?? new AbortController().signal;
  const common = { host, machine: o.machine, store, info: info(host, o), reporter: reporter(o), env: { PATH: "/usr/bin" }, signal, sandbox: "off" as const, recordedIterations };
  if (snapshot.lanes) return runLanes({ ...common, snapshot, seq }, preface);
  return createRunner({ ...common, tasks: o.tasks }, snapshot, seq).run(resumed ? { type: "resumed", at: host.clock.now() } : { type: "start", at: host.clock.now() }, preface);
}

const started = (o: RunSetup, machine: Machine) => ({ type: "run.started", pipeline: machine.name, file: o.file, hash: "h", workdir: WORKDIR, params: {}, max_iterations: maxIterations(machine), phases: machine.phases.map((p) => p.name), version: "test" });

/** `run`: the run folder appears whole with its first checkpoint, then the runner (or the lanes) drive the machine. */
export async function startOn(host: MemoryHost, o: RunSetup): Promise<RunResult> {
  const { machine } = o;
  const snapshot = initialSnapshot(machine, { runId: RUN_ID, params: {}, env: {}, pipeline: { name: machine.name, file: o.file, dir: dirname(o.file) }, workdir: WORKDIR });
  if (o.parallel && o.parallel > 1) {
    snapshot.lanes = { parallel: o.parallel, into: "main", targetDir: WORKDIR, lanes: [] };
    snapshot.tasks = (o.tasks ?? []).map(toTaskState);
  }
  const first: Checkpoint = { snapshot, seq: 0, pending: [], updated_at: isoNow(host.clock) };
  const store = RunStore.create(WORKDIR, RUN_ID, { "run.json": JSON.stringify(info(host, o), null, 2) + "\n", "state.json": JSON.stringify(first), "events.jsonl": "", "iterations.jsonl": "" }, host.files);
  try {
    return await drive(host, o, store, snapshot, 0, false, [started(o, machine)]);
  } finally {
    store.close();
  }
}

/** `resume` on what the host holds; "finished" when the run had ended (its run.finished logged if the crash lost it). */
export async function resumeOn(host: MemoryHost, o: RunSetup): Promise<RunResult | "finished"> {
  const files = host.files;
  if (!files.exists(DIR)) return startOn(host, o); // the crash came before the run folder was renamed into place
  const events = scanEventLog(DIR, RUN_ID, false, files);
  const iterations = scanIterationLog(DIR, RUN_ID, false, files);
  if (!events.ok || !iterations.ok) throw new Error(`unreadable log: ${JSON.stringify(events.ok ? iterations : events)}`);
  const read = readCheckpoint(DIR, RUN_ID, o.machine, o.file, files);
  if (read.kind !== "ok") throw new Error(`unreadable checkpoint: ${JSON.stringify(read)}`);
  const store = openStore(WORKDIR, RUN_ID, events.value, iterations.value, read.file, files);
  if (!(store instanceof RunStore)) throw new Error(`cannot open the store: ${JSON.stringify(store)}`);
  try {
    const cp = read.checkpoint;
    replayPending(store, cp, events.value, iterations.value);
    const snapshot = cp.snapshot;
    if (snapshot.status === "done") {
      const logged = events.value.finished || cp.pending.some((e) => e.type === "run.finished");
      if (!logged) store.events.append({ v: 1, seq: Math.max(events.value.lastSeq, cp.seq) + 1, at: isoNow(host.clock), run: RUN_ID, type: "run.finished", outcome: snapshot.outcome!.outcome, reason: snapshot.outcome!.reason });
      return "finished";
    }
    snapshot.status = "interrupted";
    const seq = Math.max(events.value.lastSeq, cp.seq);
    const preface = seq === 0 ? [started(o, o.machine)] : [{ type: "run.resumed", iteration: snapshot.iteration, phase: null, pipeline: o.machine.name, workdir: WORKDIR, max_iterations: snapshot.limits.maxIterations }];
    return await drive(host, o, store, snapshot, seq, true, preface, iterations.value.iterations);
  } finally {
    store.close();
  }
}

/** Start, and swallow the crash the host was told to make. */
export async function startUntilCrash(host: MemoryHost, o: RunSetup): Promise<void> {
  await startOn(host, o).catch((error: unknown) => {
    if (!(error instanceof HostCrash)) throw error;
  });
}

/** A JSON-lines file of the host: its records, and what is wrong with its lines. */
export function jsonlOn(host: MemoryHost, path: string): { records: Record<string, unknown>[]; badLines: string[] } {
  const text = host.snapshot()[path] ?? "";
  const badLines: string[] = [];
  if (text !== "" && !text.endsWith("\n")) badLines.push(`${path}: the last line has no newline`);
  const records = text.split("\n").filter((l) => l !== "").flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      badLines.push(`${path}: ${l.slice(0, 80)}`);
      return [];
    }
  });
  return { records, badLines };
}

/** A run folder's logs on the host (the run's, or a child's under it), as logViolations reads them. */
export function runFilesOn(host: MemoryHost, dir = DIR) {
  const events = jsonlOn(host, `${dir}/events.jsonl`);
  const iterations = jsonlOn(host, `${dir}/iterations.jsonl`);
  return { runId: RUN_ID, events: events.records, iterations: iterations.records, badLines: [...events.badLines, ...iterations.badLines] };
}

/** The run's checkpoint as a resume would read it: the journal's last whole line, or state.json, or the state.json.next a crash left in its place. */
export function checkpointOn(host: MemoryHost, dir = DIR): Checkpoint {
  const state = `${dir}/state.json`;
  const text = lastJournalLine(`${dir}/state.journal`, host.files) ?? (host.files.exists(state) ? host.files.readText(state) : host.files.readText(`${state}.next`));
  return JSON.parse(text) as Checkpoint;
}
