/**
 * Starting and resuming runs: load and compile the pipeline, resolve params,
 * take the workdir lock, set up the run directory, and hand over to Runner.
 */
import { existsSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { VERSION } from "../generated/version.ts";
import { compilePipeline } from "../machine/compile-pipeline.ts";
import { exitCodeFor, initialSnapshot } from "../machine/transition.ts";
import { resolveParams } from "../machine/resolve-params.ts";
import type { Machine, TaskItem } from "../machine/types.ts";
import { loadPipeline, type LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { acquireLock } from "../runtime/run-lock.ts";
import { newRunId, RunStore, runPath } from "../runtime/run-store.ts";
import { stopRunProcesses } from "../runtime/orphans.ts";
import { listRunIds } from "../reporters/run-log.ts";
import { loadTasks, TaskSourceError } from "./load-tasks.ts";
import type { Reporter } from "./run-events.ts";
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
  | { kind: "ran"; result: RunResult; runId: string };

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
  const lock = acquireLock(workdir, runId, new Date());
  if (!lock.ok) return { kind: "usage", message: lock.message };
  try {
    const store = new RunStore(workdir, runId);
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
    store.writeRunInfo(info);
    const reporter = o.reporter();
    const runner = new Runner({ machine, store, info, reporter, env: o.env, tasks, signal: o.signal }, snapshot, 0);
    runner.initialCheckpoint();
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
  const store = new RunStore(workdir, runId);
  const info = store.readRunInfo<RunInfo>();
  const cp = store.readState<Checkpoint>();
  if (!info || !cp) {
    store.close();
    return { kind: "usage", message: `run ${runId} has no checkpoint to resume from (${runPath(workdir, runId)})` };
  }
  if (cp.snapshot.status === "done") {
    store.close();
    const outcome = cp.snapshot.outcome!;
    return { kind: "finished", runId, message: `run ${runId} already finished: ${outcome.outcome} — ${outcome.reason.message}`, exitCode: exitCodeFor(outcome.outcome) };
  }
  const { loaded, machine, diagnostics } = await compileFile(info.file);
  if (!machine) {
    store.close();
    return { kind: "invalid", diagnostics, loaded };
  }
  const hash = pipelineHash(loaded.file, loaded.text, loaded.promptFiles);
  if (hash !== info.hash && !o.force) {
    store.close();
    return { kind: "usage", message: `the pipeline ${info.file} changed since run ${runId} started; resume with --force to continue with the new version` };
  }
  const lock = acquireLock(workdir, runId, new Date());
  if (!lock.ok) {
    store.close();
    return { kind: "usage", message: lock.message };
  }
  try {
    // a crash may have lost the last events: the checkpoint carries them
    store.sealTornLines();
    const last = store.lastEventSeq();
    const missing = cp.pending.filter((e) => e.seq > last);
    store.events.appendMany(missing);
    const seq = Math.max(last, cp.seq);
    const reporter = o.reporter();
    const snapshot = cp.snapshot;
    if (snapshot.status !== "interrupted") snapshot.status = "interrupted"; // a crash: the run stopped without saying so
    const runner = new Runner({ machine, store, info: hash !== info.hash ? { ...info, hash } : info, reporter, env: o.env, signal: o.signal }, snapshot, seq);
    const inFlight = snapshot.awaiting?.kind === "phase" || snapshot.awaiting?.kind === "retry" ? snapshot.awaiting.phase : null;
    const preface: Record<string, unknown>[] = [{ type: "run.resumed", iteration: snapshot.iteration, phase: inFlight }];
    // a killed phaseloop leaves its phase running in its own process group: stop it before running the phase again
    for (const id of new Set([runId, lock.tookOver?.run_id ?? runId])) {
      const left = await stopRunProcesses(id);
      if (left.length) preface.push({ type: "note", level: "warning", message: leftoverNote(id, left) });
    }
    if (hash !== info.hash) preface.push({ type: "note", level: "warning", message: "resumed with a changed pipeline (--force)" } as never);
    const result = await runner.run({ type: "resumed", at: Date.now() }, preface);
    store.close();
    await reporter.close();
    return { kind: "ran", result, runId };
  } finally {
    lock.release();
  }
}

function leftoverNote(runId: string, pids: number[]): string {
  return `stopped ${pids.length} process${pids.length === 1 ? "" : "es"} left running by an earlier life of run ${runId} (pid ${pids.join(", ")})`;
}
