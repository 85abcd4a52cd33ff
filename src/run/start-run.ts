/**
 * Starting and resuming runs: load and compile the pipeline, resolve params,
 * take the workdir lock, set up the run directory, and hand over to Runner.
 */
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { VERSION } from "../generated/version.ts";
import { compilePipeline } from "../machine/compile-pipeline.ts";
import { exitCodeFor, initialSnapshot } from "../machine/transition.ts";
import { resolveParams } from "../machine/resolve-params.ts";
import type { Machine, TaskItem } from "../machine/types.ts";
import { loadPipeline, type LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { acquireLock, lockPathProblem } from "../runtime/run-lock.ts";
import { newRunId, RunStore, runPath } from "../runtime/run-store.ts";
import { stopRunProcesses } from "../runtime/orphans.ts";
import { listRunIds } from "../reporters/run-log.ts";
import { loadTasks, TaskSourceError } from "./load-tasks.ts";
import { checkBaselineFile, formatStateProblem, readCheckpoint, readRunInfo, repairTornTail, scanEventLog, scanIterationLog, startOverHint, type EventLogScan, type IterationLogScan, type JsonlScan, type StateProblem } from "./read-run-state.ts";
import type { Reporter, RunEvent } from "./run-events.ts";
import { agentVersions } from "./agent-versions.ts";
import type { Checkpoint } from "./checkpoint.ts";
import { pipelineHash, type RunInfo } from "./run-info.ts";
import { Runner, type RunResult } from "./run-pipeline.ts";

const readHost = {
  async readFile(path: string) {
    try {
      return await readFile(path, "utf8");
    } catch {
      return undefined;
    }
  },
};

export type StartOutcome =
  | { kind: "invalid"; diagnostics: Diagnostic[]; loaded?: LoadedPipeline; message?: string }
  | { kind: "usage"; message: string }
  /** resume of a run that had already ended: nothing to do; its exit code stands */
  | { kind: "finished"; runId: string; message: string; exitCode: number }
  | { kind: "dry-run"; machine: Machine; loaded: LoadedPipeline; params: Record<string, import("../pipeline/spec.ts").JsonValue> }
  | { kind: "ran"; result: RunResult; runId: string }
  /** a file of the run's state, or the lock, cannot be used: printed as it is, exit 2 */
  | { kind: "state"; text: string };

export interface StartOptions {
  pipeline: string;
  params: Record<string, string>;
  workdir: string;
  maxIterations?: number;
  dryRun?: boolean;
  env: Record<string, string | undefined>;
  reporter: () => Reporter;
  signal: AbortSignal;
}

async function compileFile(path: string): Promise<{ loaded: LoadedPipeline; machine?: Machine; diagnostics: Diagnostic[] }> {
  const loaded = await loadPipeline(path, readHost);
  if (hasErrors(loaded.diagnostics) || !loaded.doc) return { loaded, diagnostics: loaded.diagnostics };
  const compiled = compilePipeline(loaded.doc, { promptFiles: loaded.promptFiles, file: loaded.file });
  return { loaded, machine: compiled.machine, diagnostics: [...loaded.diagnostics, ...compiled.diagnostics] };
}

function pickEnv(machine: Machine, env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of machine.envNames) if (env[name] !== undefined) out[name] = env[name]!;
  return out;
}

export async function startRun(o: StartOptions): Promise<StartOutcome> {
  const workdir = resolve(o.workdir);
  if (!existsSync(workdir) || !statSync(workdir).isDirectory()) return { kind: "usage", message: `the workdir "${o.workdir}" is not a directory` };
  const { loaded, machine, diagnostics } = await compileFile(o.pipeline);
  if (!machine) return { kind: "invalid", diagnostics, loaded };
  const resolved = resolveParams(machine, o.params);
  if (resolved.diagnostics.length) return { kind: "invalid", diagnostics: resolved.diagnostics.map((d) => ({ ...d, file: loaded.file })), loaded };
  if (o.dryRun) return { kind: "dry-run", machine, loaded, params: resolved.params };

  // read the task queue before anything is written: a bad source is an input error
  let tasks: TaskItem[] | undefined;
  if (machine.tasks) {
    try {
      tasks = await loadTasks(machine.tasks, workdir);
    } catch (error) {
      if (error instanceof TaskSourceError) {
        const code = /cycle/.test(error.message) ? "TASK_CYCLE" : "TASK_SOURCE";
        return { kind: "invalid", diagnostics: [{ code, severity: "error", message: error.message, file: loaded.file, start: 0, end: 0, pointer: "/tasks/source" }], loaded };
      }
      throw error;
    }
  }

  const runId = newRunId(new Date(), Math.random);
  const lockProblem = lockPathProblem(workdir);
  if (lockProblem) return { kind: "state", text: `${lockProblem}\n` };
  const lock = acquireLock(workdir, runId, new Date());
  if (!lock.ok) return { kind: "usage", message: lock.message };
  try {
    const file = resolve(loaded.file);
    const snapshot = initialSnapshot(machine, {
      runId,
      params: resolved.params,
      env: pickEnv(machine, o.env),
      pipeline: { name: machine.name, file, dir: dirname(file) },
      workdir,
    });
    if (o.maxIterations !== undefined) snapshot.limits.maxIterations = o.maxIterations;
    const info: RunInfo = {
      run_id: runId,
      pipeline: machine.name,
      file,
      hash: pipelineHash(loaded.file, loaded.text, loaded.promptFiles),
      version: VERSION,
      params: resolved.params,
      workdir,
      started_at: new Date().toISOString(),
      agents: agentVersions(machine),
      max_iterations: snapshot.limits.maxIterations,
    };
    // the run directory appears with its run.json and first checkpoint: a run killed at once can still be resumed
    const first: Checkpoint = { snapshot, seq: 0, pending: [], updated_at: new Date().toISOString() };
    let store: RunStore;
    try {
      store = RunStore.create(workdir, runId, { "run.json": JSON.stringify(info, null, 2) + "\n", "state.json": JSON.stringify(first), "events.jsonl": "", "iterations.jsonl": "" });
    } catch (error) {
      return { kind: "state", text: `${runPath(workdir, runId)}: error RUN_STATE_INVALID cannot be created: ${(error as Error).message}\n  hint: phaseloop keeps its runs under ${join(workdir, ".phaseloop", "runs")}; make that a writable directory\n` };
    }
    const reporter = o.reporter();
    const runner = new Runner({ machine, store, info, reporter, env: o.env, tasks, signal: o.signal }, snapshot, 0);
    const preface = [
      {
        type: "run.started",
        pipeline: machine.name,
        file,
        hash: info.hash,
        workdir,
        params: resolved.params,
        max_iterations: snapshot.limits.maxIterations,
        phases: machine.phases.map((p) => p.name),
        version: VERSION,
      },
    ];
    if (lock.tookOver) {
      preface.push({ type: "note", level: "warning", message: `took over the lock of run ${lock.tookOver.run_id} (pid ${lock.tookOver.pid} is gone)` } as never);
      const left = await stopRunProcesses(lock.tookOver.run_id);
      if (left.length) preface.push({ type: "note", level: "warning", message: leftoverNote(lock.tookOver.run_id, left) } as never);
    }
    const result = await runner.run({ type: "start", at: Date.now() }, preface);
    store.close();
    await reporter.close();
    return { kind: "ran", result, runId };
  } finally {
    lock.release();
  }
}

export interface ResumeOptions {
  runId?: string;
  workdir: string;
  force: boolean;
  env: Record<string, string | undefined>;
  reporter: () => Reporter;
  signal: AbortSignal;
}

export async function resumeRun(o: ResumeOptions): Promise<StartOutcome> {
  const workdir = resolve(o.workdir);
  const ids = await listRunIds(workdir);
  if (ids.length === 0) return { kind: "usage", message: `no runs in ${workdir}/.phaseloop` };
  const matches = o.runId ? ids.filter((id) => id === o.runId || id.startsWith(o.runId!)) : [ids[ids.length - 1]!];
  if (matches.length !== 1) {
    const hint = o.runId ? didYouMean(o.runId, ids) : undefined;
    return { kind: "usage", message: matches.length === 0 ? `no run "${o.runId}" in ${workdir}/.phaseloop${hint ? ` (${hint})` : ""}` : `"${o.runId}" matches several runs: ${matches.join(", ")}` };
  }
  const runId = matches[0]!;
  const dir = runPath(workdir, runId);
  // every file is read through its validator before anything is written
  const lockProblem = lockPathProblem(workdir);
  if (lockProblem) return { kind: "state", text: `${lockProblem}\n` };
  const infoRead = readRunInfo(dir, runId);
  if (!infoRead.ok) return stateProblem(infoRead.problem);
  const info = infoRead.value;
  const early = readCheckpoint(dir, runId, undefined, info.file);
  if (early.kind === "invalid") return stateProblem(early.problem);
  const events = scanEventLog(dir, runId, o.force);
  if (!events.ok) return stateProblem(events.problem);
  const iterations = scanIterationLog(dir, runId, o.force);
  if (!iterations.ok) return stateProblem(iterations.problem);
  if (early.kind === "ok" && early.checkpoint.snapshot.status === "done") return finishedRun(workdir, runId, dir, early, events.value, iterations.value);

  const { loaded, machine, diagnostics } = await compileFile(info.file);
  if (!machine) return { kind: "invalid", diagnostics, loaded };
  const hash = pipelineHash(loaded.file, loaded.text, loaded.promptFiles);
  if (hash !== info.hash && !o.force) {
    return { kind: "usage", message: `the pipeline ${info.file} changed since run ${runId} started; resume with --force to continue with the new version` };
  }
  const read = readCheckpoint(dir, runId, machine, info.file);
  if (read.kind === "invalid") return stateProblem(read.problem);
  let cp: Checkpoint;
  if (read.kind === "ok") cp = read.checkpoint;
  else if (events.value.lastSeq === 0) {
    // stopped before its first checkpoint: nothing ran, so it starts from the beginning
    const file = resolve(info.file);
    const snapshot = initialSnapshot(machine, { runId, params: info.params, env: pickEnv(machine, o.env), pipeline: { name: machine.name, file, dir: dirname(file) }, workdir: info.workdir });
    snapshot.limits.maxIterations = info.max_iterations;
    cp = { snapshot, seq: 0, pending: [], updated_at: new Date().toISOString() };
  } else {
    return stateProblem({ file: join(dir, "state.json"), message: "is missing, but the run has logged events", hint: startOverHint(runId, info.file) });
  }
  const baselineProblem = machine.measuresChanges && cp.snapshot.iterationOpen ? checkBaselineFile(dir, runId) : undefined;
  if (baselineProblem && !o.force) return stateProblem(baselineProblem);

  const lock = acquireLock(workdir, runId, new Date());
  if (!lock.ok) return { kind: "usage", message: lock.message };
  try {
    const opened = openStore(workdir, runId, events.value, iterations.value, read.kind === "ok" ? read.file : undefined);
    if ("kind" in opened) return opened;
    const store = opened;
    replayPending(store, cp, events.value, iterations.value);
    if (baselineProblem) rmSync(baselineProblem.file, { recursive: true, force: true }); // --force: measured from now on
    const seq = Math.max(events.value.lastSeq, cp.seq);
    const reporter = o.reporter();
    const snapshot = cp.snapshot;
    if (snapshot.status !== "interrupted") snapshot.status = "interrupted"; // a crash: the run stopped without saying so
    const runner = new Runner({ machine, store, info: hash !== info.hash ? { ...info, hash } : info, reporter, env: o.env, signal: o.signal }, snapshot, seq);
    const inFlight = snapshot.awaiting?.kind === "phase" || snapshot.awaiting?.kind === "retry" ? snapshot.awaiting.phase : null;
    // a run stopped before it logged anything starts its log now
    const preface: Record<string, unknown>[] = seq === 0 ? [runStartedEvent(machine, info)] : [{ type: "run.resumed", iteration: snapshot.iteration, phase: inFlight }];
    // a killed phaseloop leaves its phase running in its own process group: stop it before running the phase again
    for (const id of new Set([runId, lock.tookOver?.run_id ?? runId])) {
      const left = await stopRunProcesses(id);
      if (left.length) preface.push({ type: "note", level: "warning", message: leftoverNote(id, left) });
    }
    if (baselineProblem) preface.push({ type: "note", level: "warning", message: `baseline.json was unusable (${baselineProblem.message}); iteration ${snapshot.iteration} measures its changes from now on (--force)` });
    if (hash !== info.hash) preface.push({ type: "note", level: "warning", message: "resumed with a changed pipeline (--force)" } as never);
    const result = await runner.run({ type: "resumed", at: Date.now() }, preface);
    store.close();
    await reporter.close();
    return { kind: "ran", result, runId };
  } finally {
    lock.release();
  }
}

function stateProblem(problem: StateProblem): StartOutcome {
  return { kind: "state", text: formatStateProblem(problem) };
}

/**
 * The run directory, repaired: torn last lines cut off, and a checkpoint
 * found only in `state.json.next` (a crash between replacing the one with the
 * other) put back in place before anything writes a new one. A directory that
 * cannot be written is reported.
 */
function openStore(workdir: string, runId: string, events: JsonlScan, iterations: JsonlScan, checkpointFile?: string): RunStore | StartOutcome {
  const dir = runPath(workdir, runId);
  try {
    repairTornTail(join(dir, "events.jsonl"), events);
    repairTornTail(join(dir, "iterations.jsonl"), iterations);
    if (checkpointFile !== undefined && checkpointFile !== join(dir, "state.json")) renameSync(checkpointFile, join(dir, "state.json"));
    return new RunStore(workdir, runId);
  } catch (error) {
    return stateProblem({ file: dir, message: `cannot be written: ${(error as Error).message}`, hint: startOverHint(runId) });
  }
}

/**
 * A crash may have lost what the checkpoint carries: the events after the
 * log's last seq and the iteration records the file lacks are appended, so
 * nothing is lost and nothing is written twice.
 */
function replayPending(store: RunStore, cp: Checkpoint, events: EventLogScan, iterations: IterationLogScan): RunEvent[] {
  const missing = cp.pending.filter((e) => e.seq > events.lastSeq);
  store.iterations.appendMany((cp.pending_iterations ?? []).filter((r) => !iterations.iterations.has(r.iteration)));
  store.events.appendMany(missing);
  return missing;
}

/**
 * A run whose checkpoint says it ended: its exit code stands. A crash between
 * that checkpoint and the log may have lost the last events; they are
 * appended (by their seq, so never twice), and `run.finished` if the log has none.
 */
async function finishedRun(workdir: string, runId: string, dir: string, read: { checkpoint: Checkpoint; file: string }, events: EventLogScan, iterations: IterationLogScan): Promise<StartOutcome> {
  const cp = read.checkpoint;
  const outcome = cp.snapshot.outcome;
  if (!outcome) return stateProblem({ file: read.file, message: "snapshot.outcome: null in a finished run", hint: startOverHint(runId) });
  const missing = cp.pending.filter((e) => e.seq > events.lastSeq);
  const logged = events.finished || missing.some((e) => e.type === "run.finished");
  const records = (cp.pending_iterations ?? []).filter((r) => !iterations.iterations.has(r.iteration));
  const repairs = events.tornBytes > 0 || events.needsNewline || iterations.tornBytes > 0 || iterations.needsNewline || read.file !== join(dir, "state.json");
  if (missing.length > 0 || records.length > 0 || !logged || repairs) {
    const lock = acquireLock(workdir, runId, new Date());
    if (lock.ok) {
      try {
        const opened = openStore(workdir, runId, events, iterations, read.file);
        if ("kind" in opened) return opened;
        replayPending(opened, cp, events, iterations);
        if (!logged) {
          const s = cp.snapshot;
          const seq = Math.max(events.lastSeq, cp.seq, ...missing.map((e) => e.seq)) + 1;
          const code = exitCodeFor(outcome.outcome);
          opened.events.append({ v: 1, seq, at: new Date().toISOString(), run: runId, type: "run.finished", outcome: outcome.outcome, reason: outcome.reason, exit_code: code, iterations: s.iteration, tokens: s.tokens, cost_usd: s.costUsd, elapsed_ms: s.elapsedMs });
        }
        opened.close();
      } finally {
        lock.release();
      }
    }
  }
  return { kind: "finished", runId, message: `run ${runId} already finished: ${outcome.outcome} — ${outcome.reason.message}`, exitCode: exitCodeFor(outcome.outcome) };
}

function runStartedEvent(machine: Machine, info: RunInfo): Record<string, unknown> {
  return { type: "run.started", pipeline: machine.name, file: info.file, hash: info.hash, workdir: info.workdir, params: info.params, max_iterations: info.max_iterations, phases: machine.phases.map((p) => p.name), version: VERSION };
}

function leftoverNote(runId: string, pids: number[]): string {
  return `stopped ${pids.length} process${pids.length === 1 ? "" : "es"} left running by an earlier life of run ${runId} (pid ${pids.join(", ")})`;
}
