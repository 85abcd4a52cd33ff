/**
 * Resuming a run: every file of its state is read through its validator
 * before anything is written; what a crash lost or tore is repaired from the
 * checkpoint (never twice); then Runner continues from the checkpoint. With
 * --force, what cannot be used is rebuilt from events.jsonl where it can be.
 */
import { dirname, join, resolve } from "node:path";
import { isoNow, type Host, type HostFiles } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { exitCodeFor, initialSnapshot } from "../machine/transition.ts";
import { acquireLock, lockPathProblem } from "../runtime/run-lock.ts";
import { listRunIds, RunStore, runPath } from "../runtime/run-store.ts";
import { checkCheckpoint } from "./check-run-state.ts";
import type { Checkpoint } from "./checkpoint.ts";
import { checkBaselineFile, checkPhasesDir, formatStateProblem, readCheckpoint, readRunInfo, repairTornTail, scanEventLog, scanIterationLog, startOverHint, type EventLogScan, type IterationLogScan, type JsonlScan, type StateProblem, forceHint } from "./read-run-state.ts";
import { readLoggedEvents, rebuildCheckpoint, runInfoFromLog } from "./rebuild-checkpoint.ts";
import type { Asker } from "./ask-question.ts";
import type { Reporter } from "./run-events.ts";
import { changedFiles, hashedSources, pipelineHash, runFiles, runStartedEvent, type RunInfo } from "./run-info.ts";
import { createRunner } from "./run-pipeline.ts";
import { compileFile, leftoverNote, pickEnv, preflightRun, type StartOutcome } from "./start-run.ts";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { closeFences } from "./phase-fence.ts";
import { removeRunState } from "./agent-state.ts";
import { checkSandbox } from "./sandbox-preflight.ts";
import { machineForTask } from "./single-task.ts";
import { runLanes } from "./run-lanes.ts";

export interface ResumeOptions {
  runId?: string;
  workdir: string;
  force: boolean;
  /** `--sandbox`; without it, the run keeps the flag it started with. */
  sandbox?: SandboxMode;
  env: Record<string, string | undefined>;
  reporter: () => Reporter;
  signal: AbortSignal;
  /** The answer to the question the run waits on (`--answer`, `--answer-file`). */
  answer?: string;
  /** Asks at the terminal when no answer was given. */
  ask?: Asker;
  /** Files, processes and the clock: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export async function resumeRun(o: ResumeOptions): Promise<StartOutcome> {
  const host = o.host ?? nodeHost;
  const files = host.files;
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
  const lockProblem = lockPathProblem(workdir, host);
  if (lockProblem) return { kind: "state", text: `${lockProblem}\n` };
  const events = scanEventLog(dir, runId, o.force, files);
  if (!events.ok) return stateProblem(events.problem);
  const iterations = scanIterationLog(dir, runId, o.force, files);
  if (!iterations.ok) return stateProblem(iterations.problem);
  const phasesProblem = checkPhasesDir(dir, runId, files);
  if (phasesProblem) return stateProblem(phasesProblem);
  const logged = o.force ? readLoggedEvents(dir, files) : [];

  const infoRead = readRunInfo(dir, runId, files);
  let info: RunInfo;
  let rebuiltInfo = false;
  if (infoRead.ok) info = infoRead.value;
  else {
    const fromLog = o.force ? runInfoFromLog(runId, logged) : undefined;
    if (!fromLog) return stateProblem(o.force ? { ...infoRead.problem, message: `${infoRead.problem.message}, and events.jsonl has no run.started to rebuild it from`, hint: startOverHint(runId) } : infoRead.problem);
    info = fromLog;
    rebuiltInfo = true;
  }
  const early = readCheckpoint(dir, runId, undefined, info.file, files);
  if (early.kind === "invalid" && !o.force) return stateProblem(early.problem);
  if (early.kind === "ok" && early.checkpoint.snapshot.status === "done") return finishedRun(host, workdir, runId, dir, early, events.value, iterations.value);

  const compiled = await compileFile(info.file, host);
  const { loaded, diagnostics } = compiled;
  if (!compiled.machine) return { kind: "invalid", diagnostics, loaded };
  const machine = info.task !== undefined ? machineForTask(compiled.machine, info.task) : compiled.machine;
  const hash = pipelineHash(loaded.file, loaded.text, loaded.promptFiles, hashedSources(loaded));
  if (hash !== info.hash && !o.force) {
    const which = changedFiles(info.files, runFiles(loaded));
    const detail = which && which.length ? ` (${which.join("; ")})` : "";
    return { kind: "usage", message: `the pipeline ${info.file} changed since run ${runId} started${detail}; resume with --force to continue with the new version` };
  }
  const preflight = await preflightRun(machine, loaded, info.params, info.workdir, o.env, host);
  const sandboxFlag = o.sandbox ?? info.sandbox?.flag ?? undefined;
  const sandbox = checkSandbox(machine, loaded.text, sandboxFlag, o.env, info.workdir);
  const found = [...preflight.diagnostics, ...sandbox.diagnostics];
  if (hasErrors(found)) return { kind: "invalid", diagnostics: found, loaded };
  const read = readCheckpoint(dir, runId, machine, info.file, files);
  let cp: Checkpoint;
  const notes: string[] = [];
  if (read.kind === "ok") cp = read.checkpoint;
  else if (read.kind === "missing" && events.value.lastSeq === 0) {
    // stopped before its first checkpoint: nothing ran, so it starts from the beginning
    const file = resolve(info.file);
    const snapshot = initialSnapshot(machine, { runId, params: info.params, env: pickEnv(machine, o.env), pipeline: { name: machine.name, file, dir: dirname(file) }, workdir: info.workdir });
    snapshot.limits.maxIterations = info.max_iterations;
    cp = { snapshot, seq: 0, pending: [], updated_at: isoNow(host.clock) };
  } else if (o.force) {
    const rebuilt = await rebuildCheckpoint(machine, info, logged, dir, pickEnv(machine, o.env), host);
    cp = rebuilt.checkpoint;
    cp.seq = Math.max(cp.seq, events.value.lastSeq);
    const why = read.kind === "invalid" ? `${read.problem.message}` : "it was missing";
    notes.push(`state.json could not be used (${why}); the checkpoint was rebuilt from events.jsonl up to iteration ${cp.snapshot.iteration}${rebuilt.unmatched > 0 ? `; ${rebuilt.unmatched} logged phase run${rebuilt.unmatched === 1 ? "" : "s"} did not replay and will run again` : ""} (--force)`);
  } else {
    return stateProblem(read.kind === "invalid" ? read.problem : { file: join(dir, "state.json"), message: "is missing, but the run has logged events", hint: forceHint(runId, "rebuilds the checkpoint from events.jsonl", info.file) });
  }
  if (read.kind !== "ok") {
    // a first or rebuilt checkpoint takes its params from run.json
    const problem = checkCheckpoint(cp, machine);
    if (problem) return stateProblem({ file: join(dir, "run.json"), message: `cannot start the run again from it: ${problem}`, hint: startOverHint(runId, info.file) });
  }
  if (cp.snapshot.status === "done") {
    // the rebuilt checkpoint says the run had ended
    return finishedRun(host, workdir, runId, dir, { checkpoint: cp, file: join(dir, "state.json") }, events.value, iterations.value, cp);
  }
  if (o.answer !== undefined && cp.snapshot.awaiting?.kind !== "answer") {
    return { kind: "usage", message: `run ${runId} is not waiting for an answer; resume it without --answer` };
  }
  const baselineProblem = machine.measuresChanges && cp.snapshot.iterationOpen ? checkBaselineFile(dir, runId, files) : undefined;
  if (baselineProblem && !o.force) return stateProblem(baselineProblem);
  if (baselineProblem) notes.push(`baseline.json was unusable (${baselineProblem.message}); iteration ${cp.snapshot.iteration} measures its changes from now on (--force)`);
  if (rebuiltInfo) notes.push("run.json could not be used; it was rebuilt from the log's run.started (--force)");

  const lock = acquireLock(workdir, runId, new Date(host.clock.now()), host);
  if (!lock.ok) return { kind: "usage", message: lock.message };
  try {
    const opened = openStore(workdir, runId, events.value, iterations.value, read.kind === "ok" ? read.file : undefined, files);
    if ("kind" in opened) return opened;
    const store = opened;
    if (o.sandbox !== undefined && o.sandbox !== info.sandbox?.flag) {
      info = { ...info, sandbox: sandbox.record };
      if (!rebuiltInfo) store.writeRunInfo(info);
    }
    if (rebuiltInfo) {
      if (!infoRead.ok && infoRead.problem.message !== "is missing: the run stopped before it was set up") setAside(files, join(dir, "run.json"));
      store.writeRunInfo(info);
    }
    // an unusable line of the journal was put in state.json as the store opened: that is what is kept aside
    if (read.kind === "invalid") setAside(files, read.problem.file === join(dir, "state.journal") ? join(dir, "state.json") : read.problem.file);
    if (read.kind !== "ok") store.writeState(cp); // a rebuilt or first checkpoint replaces the unusable one before anything runs
    replayPending(store, cp, events.value, iterations.value);
    if (baselineProblem) setAside(files, baselineProblem.file); // measured from now on
    const seq = Math.max(events.value.lastSeq, cp.seq);
    const reporter = o.reporter();
    const snapshot = cp.snapshot;
    if (snapshot.status !== "interrupted") snapshot.status = "interrupted"; // a crash: the run stopped without saying so
    const runner = createRunner({ host, machine, store, info: hash !== info.hash ? { ...info, hash } : info, reporter, env: o.env, signal: o.signal, recordedIterations: iterations.value.iterations, answers: { ask: o.ask, ...(o.answer !== undefined && snapshot.awaiting?.kind === "answer" ? { given: { text: o.answer, used: false, seq: snapshot.awaiting.seq } } : {}) }, sandbox: sandboxFlag }, snapshot, seq);
    const inFlight = snapshot.awaiting?.kind === "phase" || snapshot.awaiting?.kind === "retry" ? snapshot.awaiting.phase : null;
    // a run stopped before it logged anything starts its log now
    const preface: Record<string, unknown>[] = seq === 0 ? [runStartedEvent(machine, info)] : [{ type: "run.resumed", iteration: snapshot.iteration, phase: inFlight, pipeline: machine.name, workdir: info.workdir, max_iterations: snapshot.limits.maxIterations }];
    // a killed phaseloop leaves its phase running in its own process group: stop it before running the phase again
    for (const id of new Set([runId, lock.tookOver?.run_id ?? runId])) {
      const left = await host.processes.stopRun(id);
      if (left.length) preface.push({ type: "note", level: "warning", message: leftoverNote(id, left) });
    }
    for (const message of notes) preface.push({ type: "note", level: "warning", message });
    if (sandbox.warning) preface.push({ type: "note", level: "warning", message: sandbox.warning });
    if (hash !== info.hash) preface.push({ type: "note", level: "warning", message: "resumed with a changed pipeline (--force)" });
    // a run with lanes goes on with every lane it had
    const lanes = snapshot.lanes ? { host, machine, store, info: runner.o.info, reporter, env: o.env, signal: o.signal, sandbox: sandboxFlag, snapshot, seq, recordedIterations: iterations.value.iterations } : undefined;
    const result = await (lanes ? runLanes(lanes, preface) : runner.run({ type: "resumed", at: host.clock.now() }, preface)).finally(closeFences);
    // the agents' copies of their state stay while the run can be resumed
    if (result.outcome !== "interrupted") removeRunState();
    store.close();
    await reporter.close();
    return { kind: "ran", result, runId };
  } finally {
    lock.release();
  }
}

/** An unusable file replaced under --force is kept beside, for a look. */
function setAside(files: HostFiles, path: string): void {
  if (!files.exists(path) && !isLink(files, path)) return;
  files.remove(`${path}.damaged`, { recursive: true, force: true });
  files.rename(path, `${path}.damaged`);
}

function isLink(files: HostFiles, path: string): boolean {
  try {
    return files.lstat(path)?.isSymbolicLink() ?? false;
  } catch {
    return false;
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
export function openStore(workdir: string, runId: string, events: JsonlScan, iterations: JsonlScan, checkpointFile?: string, files: HostFiles = nodeFiles): RunStore | StartOutcome {
  const dir = runPath(workdir, runId);
  try {
    repairTornTail(join(dir, "events.jsonl"), events, files);
    repairTornTail(join(dir, "iterations.jsonl"), iterations, files);
    // (one found only in the journal is put in place by the store itself)
    if (checkpointFile === join(dir, "state.json.next")) files.rename(checkpointFile, join(dir, "state.json"));
    return new RunStore(workdir, runId, undefined, files);
  } catch (error) {
    return stateProblem({ file: dir, message: `cannot be written: ${(error as Error).message}`, hint: startOverHint(runId) });
  }
}

/**
 * A crash may have lost what the checkpoint carries: the events after the
 * log's last seq and the iteration records the file lacks are appended, so
 * nothing is lost and nothing is written twice.
 */
export function replayPending(store: RunStore, cp: Checkpoint, events: EventLogScan, iterations: IterationLogScan): void {
  const records = (cp.pending_iterations ?? []).filter((r) => !iterations.iterations.has(r.iteration));
  store.iterations.appendMany(records);
  for (const r of records) iterations.iterations.add(r.iteration);
  store.events.appendMany(cp.pending.filter((e) => e.seq > events.lastSeq));
}

/**
 * A run whose checkpoint says it ended: its exit code stands. A crash between
 * that checkpoint and the log may have lost the last events; they are
 * appended (by their seq, so never twice), and `run.finished` if the log has
 * none. A `rebuilt` checkpoint is written in place of the unusable one.
 */
async function finishedRun(host: Host, workdir: string, runId: string, dir: string, read: { checkpoint: Checkpoint; file: string }, events: EventLogScan, iterations: IterationLogScan, rebuilt?: Checkpoint): Promise<StartOutcome> {
  const cp = read.checkpoint;
  const outcome = cp.snapshot.outcome;
  if (!outcome) return stateProblem({ file: read.file, message: "snapshot.outcome: null in a finished run", hint: forceHint(runId, "rebuilds the checkpoint from events.jsonl") });
  const missing = cp.pending.filter((e) => e.seq > events.lastSeq);
  const logged = events.finished || missing.some((e) => e.type === "run.finished");
  const records = (cp.pending_iterations ?? []).filter((r) => !iterations.iterations.has(r.iteration));
  const repairs = events.tornBytes > 0 || events.needsNewline || iterations.tornBytes > 0 || iterations.needsNewline || read.file !== join(dir, "state.json") || rebuilt !== undefined;
  if (missing.length > 0 || records.length > 0 || !logged || repairs) {
    const lock = acquireLock(workdir, runId, new Date(host.clock.now()), host);
    if (lock.ok) {
      try {
        const opened = openStore(workdir, runId, events, iterations, rebuilt ? undefined : read.file, host.files);
        if ("kind" in opened) return opened;
        if (rebuilt) {
          if (read.file === join(dir, "state.json")) setAside(host.files, read.file);
          host.files.writeAtomic(join(dir, "state.json"), JSON.stringify(rebuilt));
        }
        replayPending(opened, cp, events, iterations);
        if (!logged) {
          const s = cp.snapshot;
          const seq = Math.max(events.lastSeq, cp.seq, ...missing.map((e) => e.seq)) + 1;
          opened.events.append({ v: 1, seq, at: isoNow(host.clock), run: runId, type: "run.finished", outcome: outcome.outcome, reason: outcome.reason, exit_code: exitCodeFor(outcome.outcome), iterations: s.iteration, tokens: s.tokens, cost_usd: s.costUsd, elapsed_ms: s.elapsedMs });
        }
        opened.close();
      } finally {
        lock.release();
      }
    }
  }
  return { kind: "finished", runId, message: `run ${runId} already finished: ${outcome.outcome} — ${outcome.reason.message}`, exitCode: exitCodeFor(outcome.outcome) };
}
