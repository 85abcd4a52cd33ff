/**
 * Starting runs: load and compile the pipeline, resolve params, take the
 * workdir lock, set up the run directory, and hand over to Runner
 * (resume-run.ts continues them).
 */
import { inheritedSecurity } from "../pipeline/inherited-security.ts";
import { resolveOwnPrograms } from "../host/own-programs.ts";
import { dirname, join, resolve } from "node:path";
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import { compileLoaded } from "../machine/compile-loaded.ts";
import { initialSnapshot } from "../machine/transition.ts";
import { resolveParams } from "../machine/resolve-params.ts";
import type { Machine, TaskItem } from "../machine/types.ts";
import { loadPipeline, type LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { acquireLock, lockPathProblem } from "../runtime/run-lock.ts";
import { gitRootOf } from "../changes/measure-changes.ts";
import { newRunId, RunStore, runPath } from "../runtime/run-store.ts";
import { loadTasks, TaskSourceError } from "./load-tasks.ts";
import type { Asker } from "./ask-question.ts";
import type { Reporter } from "./run-events.ts";
import { locateProblems, preflightHostOf, runPreflight, type PreflightResult } from "./preflight.ts";
import { isoNow, readHostOf, type Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import type { Checkpoint } from "./checkpoint.ts";
import { newRunInfo, runStartedEvent, type RunInfo, type StartedVia } from "./run-info.ts";
import { runModels } from "./agent-choices.ts";
import { createRunner, type RunResult } from "./run-pipeline.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { closeFences } from "./phase-fence.ts";
import { removeRunState } from "./agent-state.ts";
import { checkSandbox } from "./sandbox-preflight.ts";
import { checkTaskChoice, machineForTask } from "./single-task.ts";
import { checkLanes, openTarget } from "../lanes/prepare-lanes.ts";
import { runLanes } from "./run-lanes.ts";
import { toTaskState } from "../machine/task-queue.ts";


export type StartOutcome =
  | { kind: "invalid"; diagnostics: Diagnostic[]; loaded?: LoadedPipeline; message?: string }
  | { kind: "usage"; message: string }
  /** resume of a run that had already ended: nothing to do; its exit code stands */
  | { kind: "finished"; runId: string; message: string; exitCode: number }
  /** `diagnostics`: what preflight found (a run would stop on its errors before starting) */
  | { kind: "dry-run"; machine: Machine; loaded: LoadedPipeline; params: Record<string, import("../pipeline/spec.ts").JsonValue>; diagnostics: Diagnostic[] }
  | { kind: "ran"; result: RunResult; runId: string }
  /** a file of the run's state, or the lock, cannot be used: printed as it is, exit 2 */
  | { kind: "state"; text: string };

export interface StartOptions {
  pipeline: string;
  params: Record<string, string>;
  workdir: string;
  maxIterations?: number;
  dryRun?: boolean;
  /** `--sandbox`: overrides the pipeline's and the phases' settings. */
  sandbox?: SandboxMode;
  env: Record<string, string | undefined>;
  reporter: () => Reporter;
  signal: AbortSignal;
  /** Asks an ask phase's question at the terminal; without it such a run waits (exit 3). */
  ask?: Asker;
  /** `--task`: work this task of the queue only, and stop when it is done (single-task.ts). */
  task?: string;
  /** `--parallel N`: tasks at once, over the pipeline's `tasks.parallel`. */
  parallel?: number;
  /** `--into BRANCH`: where lanes merge (default: the workdir's branch). */
  into?: string;
  /** The run's id, chosen by whoever starts it (the control layer, which must know it at once); a new one otherwise. */
  runId?: string;
  /** Recorded in run.json: who started the run. */
  startedVia?: StartedVia;
  /** Files, processes and the clock: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export async function compileFile(path: string, host: Host = nodeHost): Promise<{ loaded: LoadedPipeline; machine?: Machine; diagnostics: Diagnostic[] }> {
  const loaded = await loadPipeline(path, readHostOf(host));
  if (hasErrors(loaded.diagnostics) || !loaded.doc) return { loaded, diagnostics: loaded.diagnostics };
  // the pipeline with its sub-pipelines, compiled together
  const compiled = compileLoaded(loaded);
  return { loaded, machine: compiled.machine, diagnostics: [...loaded.diagnostics, ...compiled.diagnostics] };
}

export function pickEnv(machine: Machine, env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of machine.envNames) if (env[name] !== undefined) out[name] = env[name]!;
  return out;
}

export async function startRun(o: StartOptions): Promise<StartOutcome> {
  const host = o.host ?? nodeHost;
  const workdir = resolve(o.workdir);
  // phaseloop's own programs, found before any agent runs, from a PATH without the workdir
  resolveOwnPrograms(workdir);
  if (!host.files.stat(workdir)?.isDirectory()) return { kind: "usage", message: `the workdir "${o.workdir}" is not a directory` };
  const compiled = await compileFile(o.pipeline, host);
  const { loaded, diagnostics } = compiled;
  if (!compiled.machine) return { kind: "invalid", diagnostics, loaded };
  let machine = compiled.machine;
  const resolved = resolveParams(machine, o.params);
  // a param's problem is located at its definition
  if (resolved.diagnostics.length) return { kind: "invalid", diagnostics: locateProblems(resolved.diagnostics, loaded.file, loaded.text), loaded };
  const preflight = await preflightRun(machine, loaded, resolved.params, workdir, o.env, host);
  const sandbox = checkSandbox(machine, loaded.text, o.sandbox, o.env, workdir);
  const found = [...preflight.diagnostics, ...sandbox.diagnostics];
  // a dry run is a check: the validator's warnings too (an output file the phase cannot write, …)
  if (o.dryRun) return { kind: "dry-run", machine, loaded, params: resolved.params, diagnostics: [...diagnostics, ...found] };
  if (hasErrors(found)) return { kind: "invalid", diagnostics: found, loaded };

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
  if (o.task !== undefined) {
    const problem = checkTaskChoice(machine, tasks, o.task);
    if (problem) return { kind: "usage", message: problem };
    machine = machineForTask(machine, o.task);
  }

  // parallel lanes: git worktrees merged into a clean target branch
  const parallel = o.parallel ?? machine.tasks?.parallel ?? 1;
  if (parallel > 1 && !machine.tasks) return { kind: "usage", message: `--parallel ${parallel} needs a task queue (tasks:), and ${loaded.file} has none` };
  const lanesCheck = parallel > 1 ? checkLanes(host, workdir, parallel, o.into) : undefined;
  if (lanesCheck && !lanesCheck.ok) {
    if (!lanesCheck.notGit) return { kind: "usage", message: lanesCheck.message };
    const pointer = o.parallel === undefined ? "/tasks/parallel" : "/tasks";
    return { kind: "invalid", diagnostics: [{ code: "LANES_NEED_GIT", severity: "error", message: lanesCheck.message, file: loaded.file, start: 0, end: 0, pointer }], loaded };
  }

  const runId = o.runId ?? newRunId(new Date(host.clock.now()), Math.random);
  if (host.files.exists(runPath(workdir, runId))) return { kind: "usage", message: `a run "${runId}" exists already in ${join(workdir, ".phaseloop", "runs")}` };
  const lockProblem = lockPathProblem(workdir, host);
  if (lockProblem) return { kind: "state", text: `${lockProblem}\n` };
  const lock = acquireLock(workdir, runId, new Date(host.clock.now()), host);
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
    if (lanesCheck?.ok) {
      const target = await openTarget(host, workdir, runId, parallel, lanesCheck.current, o.into);
      if (!target.ok) return { kind: "usage", message: target.message };
      snapshot.lanes = target.lanes;
      snapshot.tasks = (tasks ?? []).map(toTaskState);
    }
    const info: RunInfo = newRunInfo({ runId, machine, sources: loaded, file, params: resolved.params, workdir, maxIterations: snapshot.limits.maxIterations, startedAt: new Date(host.clock.now()) }, {
      sandbox: sandbox.record,
      ...runModels(machine, runId),
      measure: machine.measuresChanges ? (gitRootOf(host, workdir) ? "git" : "files") : "off",
      ...(o.task !== undefined ? { task: o.task } : {}),
      ...(o.startedVia !== undefined ? { started_via: o.startedVia } : {}),
    });
    // the run directory appears with its run.json and first checkpoint: a run killed at once can still be resumed
    const first: Checkpoint = { snapshot, seq: 0, pending: [], updated_at: isoNow(host.clock) };
    let store: RunStore;
    try {
      store = RunStore.create(workdir, runId, { "run.json": JSON.stringify(info, null, 2) + "\n", "state.json": JSON.stringify(first), "events.jsonl": "", "iterations.jsonl": "" }, host.files);
    } catch (error) {
      return { kind: "state", text: `${runPath(workdir, runId)}: error RUN_STATE_INVALID cannot be created: ${(error as Error).message}\n  hint: phaseloop keeps its runs under ${join(workdir, ".phaseloop", "runs")}; make that a writable directory\n` };
    }
    const versionsWritten = recordAgentVersions(store, info, preflight.versions);
    const reporter = o.reporter();
    const runner = createRunner({ host, machine, store, info, reporter, env: o.env, tasks, signal: o.signal, answers: { ask: o.ask }, sandbox: o.sandbox }, snapshot, 0);
    const preface = [runStartedEvent(machine, info)];
    if (sandbox.warning) preface.push({ type: "note", level: "warning", message: sandbox.warning } as never);
    if (sandbox.unfenced) preface.push({ type: "note", level: "warning", message: sandbox.unfenced } as never);
    // what a base or an include sets for the run's security, said where the run starts
    for (const line of inheritedSecurity(loaded)) preface.push({ type: "note", level: "warning", message: `security settings ${line}` } as never);
    if (lock.tookOver) {
      preface.push({ type: "note", level: "warning", message: `took over the lock of run ${lock.tookOver.run_id} (pid ${lock.tookOver.pid} is gone)` } as never);
      const left = await host.processes.stopRun(lock.tookOver.run_id);
      if (left.length) preface.push({ type: "note", level: "warning", message: leftoverNote(lock.tookOver.run_id, left) } as never);
    }
    const lanes = snapshot.lanes ? { host, machine, store, info, reporter, env: o.env, signal: o.signal, sandbox: o.sandbox, snapshot, seq: 0 } : undefined;
    const result = await (lanes ? runLanes(lanes, preface) : runner.run({ type: "start", at: host.clock.now() }, preface)).finally(closeFences);
    // the agents' copies of their state stay while the run can be resumed
    if (result.outcome !== "interrupted") removeRunState();
    await versionsWritten();
    store.close();
    await reporter.close();
    return { kind: "ran", result, runId };
  } finally {
    lock.release();
  }
}

/** Preflight on this machine: every agent's program can be found (see preflight.ts). */
export function preflightRun(machine: Machine, loaded: LoadedPipeline, params: Record<string, import("../pipeline/spec.ts").JsonValue>, workdir: string, env: Record<string, string | undefined>, host: Host = nodeHost): Promise<PreflightResult> {
  const found = runPreflight({ machine, file: loaded.file, text: loaded.text, params, workdir }, preflightHostOf(host, env));
  // a pipeline that extends others: each problem in the file that wrote the key
  const locate = loaded.locate;
  return locate ? found.then((r) => ({ ...r, diagnostics: r.diagnostics.map((d) => (d.pointer !== undefined && d.file === loaded.file ? { ...d, ...locate(d.pointer) } : d)) })) : found;
}

/** How long the end of a run waits for version reads still going (they never hold up its start). */
const VERSION_WAIT_MS = 5_000;

/**
 * Writes the agents' versions into run.json as they arrive (`info` is
 * updated in place). The returned function, called at the end of the run,
 * waits a few seconds at most for reads still going, then stops writing.
 */
export function recordAgentVersions(store: RunStore, info: RunInfo, versions: Promise<Record<string, string>>): () => Promise<void> {
  let closed = false;
  const written = versions
    .then((agents) => {
      info.agents = agents;
      if (!closed) store.writeRunInfo(info);
    })
    .catch(() => undefined);
  return async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((r) => {
      timer = setTimeout(r, VERSION_WAIT_MS);
    });
    await Promise.race([written, late]);
    closed = true;
    clearTimeout(timer);
  };
}

export function leftoverNote(runId: string, pids: number[]): string {
  return `stopped ${pids.length} process${pids.length === 1 ? "" : "es"} left running by an earlier life of run ${runId} (pid ${pids.join(", ")})`;
}
