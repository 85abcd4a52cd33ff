/**
 * Where a run stands, summed up from its event log read as a stream (a
 * 100,000-event log is read a chunk at a time into counters, never held
 * whole), its checkpoint, its lock and its breakers: what `status --json`
 * prints, and what the control layer's `getRun` answers.
 */
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import { formatReason } from "../run/format-reason.ts";
import { readBreakers, type Breakers } from "./read-breakers.ts";
import { isRunLive, readEvents, readLock, runDir, type RunReadHost } from "./run-log.ts";
import { addToRunSummary, emptyRunSummary, runStateOf, type RunState, type RunSummary } from "./run-summary.ts";
import { machineName } from "../runtime/run-lock.ts";
import { runStateProblems, type StateProblem } from "../run/read-run-state.ts";
import type { RunEvent } from "../run/run-events.ts";
import { lanesOf } from "../lanes/format-lanes.ts";
import type { LanesState } from "../machine/types.ts";
import { readCheckpointFile } from "../runtime/checkpoint-file.ts";

export interface RunStatus {
  run: string;
  state: RunState;
  /** What the user reads: the outcome and reason, or where the run stands. */
  headline: string;
  pipeline: string | null;
  file: string | null;
  version: string | null;
  started_at: string | null;
  last_event_at: string | null;
  iteration: number;
  max_iterations: number | null;
  /** The phase in flight (running or interrupted in it), its attempt, and how long it has run. */
  phase: string | null;
  phase_attempt: number | null;
  phase_started_at: string | null;
  phase_elapsed_ms: number | null;
  /** How long the run has taken: until now while it runs, until its last event otherwise. */
  elapsed_ms: number | null;
  counters: {
    phases_run: number;
    succeeded: number;
    failed: number;
    skipped: number;
    retries: number;
    policy_violations: number;
    sandbox_refusals: number;
    hook_failures: number;
    warnings: number;
    resumes: number;
  };
  tokens: number;
  cost_usd: number;
  last_error: RunSummary["last_error"];
  outcome: RunSummary["finished"];
  interrupted: RunSummary["interrupted"];
  /** The question an ask phase waits to have answered. */
  question: RunSummary["question"];
  breakers: Breakers;
  tasks: { total: number; done: number; blocked: number; pending: number };
  /** A run with parallel lanes: every lane, as its checkpoint has it. */
  lanes: LanesState | null;
  lock: { pid: number | null; live: boolean } | null;
  log: { events: number; torn_last_line: boolean; malformed_lines: number };
  /** The command that continues the run, when it can be resumed. */
  resume: string | null;
  /** State files that resume cannot use as they are: the file, what is wrong, what to do. */
  problems: StateProblem[];
}

/** The event log cannot be read at all (it is a directory, say). */
export class UnreadableLogError extends Error {
  readonly file: string;
  constructor(file: string, message: string) {
    super(message);
    this.file = file;
  }
}

/** Reads one run's directory and sums it up; `now` (the clock's, unless given) is when a running run's time ends. */
export async function readRunStatus(workdir: string, runId: string, on: RunReadHost, now = on.clock.now()): Promise<RunStatus> {
  const { files } = on;
  const dir = runDir(workdir, runId);
  const summary = emptyRunSummary();
  const log = await readEvents(join(dir, "events.jsonl"), (event) => addToRunSummary(summary, event), files);
  if (log.problem !== undefined) throw new UnreadableLogError(join(dir, "events.jsonl"), log.problem);
  // the checkpoint holds the last transition's events until they are appended (the phase just started, say)
  const checkpoint = readCheckpointSummary(dir, files);
  for (const event of checkpoint.pending) if (event.seq > summary.last_seq) addToRunSummary(summary, event);
  // a phase's start is logged with its end: while it runs, the checkpoint says which phase the run awaits
  if (summary.phase === null && summary.finished === null && checkpoint.awaiting !== null) {
    summary.phase = checkpoint.awaiting.phase;
    summary.phase_attempt = checkpoint.awaiting.attempt;
    summary.phase_started_at = checkpoint.awaiting.since;
  }
  const host = machineName();
  const lock = await readLock(workdir, files);
  const live = lock !== null && lock.run === runId ? await isRunLive(workdir, runId, host, on) : false;
  const state = runStateOf(summary, live);
  const { breakers } = await readBreakers(dir, files);
  const taskList = Object.values(summary.tasks);
  const resumable = state === "interrupted" || state === "crashed" || state === "awaiting answer";
  const problems = runStateProblems(dir, runId, files);
  return {
    run: runId,
    state,
    headline: headlineOf(state, summary, runId),
    pipeline: summary.pipeline,
    file: summary.file,
    version: summary.version,
    started_at: summary.started_at,
    last_event_at: summary.last_event_at,
    iteration: summary.finished?.iterations ?? summary.iteration,
    max_iterations: summary.max_iterations,
    phase: summary.phase,
    phase_attempt: summary.phase === null ? null : summary.phase_attempt,
    phase_started_at: summary.phase === null ? null : summary.phase_started_at,
    phase_elapsed_ms: summary.phase === null || summary.phase_started_at === null ? null : Math.max(0, (state === "running" ? now : Date.parse(summary.last_event_at ?? summary.phase_started_at)) - Date.parse(summary.phase_started_at)),
    elapsed_ms: summary.finished?.elapsed_ms ?? (summary.started_at === null ? null : Math.max(0, (state === "running" ? now : Date.parse(summary.last_event_at ?? summary.started_at)) - Date.parse(summary.started_at))),
    counters: {
      phases_run: summary.phases_run,
      succeeded: summary.succeeded,
      failed: summary.failures,
      skipped: summary.skipped,
      retries: summary.retries,
      policy_violations: summary.policy_violations,
      sandbox_refusals: summary.sandbox_refusals,
      hook_failures: summary.hook_failures,
      warnings: summary.warnings,
      resumes: summary.resumes,
    },
    tokens: summary.tokens,
    cost_usd: summary.cost_usd,
    last_error: summary.last_error,
    outcome: summary.finished,
    interrupted: summary.interrupted,
    question: summary.question,
    breakers,
    tasks: {
      total: taskList.length,
      done: taskList.filter((t) => t.status === "done").length,
      blocked: taskList.filter((t) => t.status === "blocked").length,
      pending: taskList.filter((t) => t.status === "pending").length,
    },
    lanes: checkpoint.lanes,
    lock: lock !== null && lock.run === runId ? { pid: lock.pid, live } : null,
    log: { events: summary.events, torn_last_line: log.torn, malformed_lines: log.malformed },
    resume: resumable ? `phaseloop resume ${runId}` : null,
    problems,
  };
}

interface CheckpointSummary {
  /** Events the checkpoint carries that the log may not hold yet. */
  pending: RunEvent[];
  /** The phase the run waits on (running, or waiting to retry), and since when. */
  awaiting: { phase: string; attempt: number; since: string | null } | null;
  lanes: LanesState | null;
}

/** What status needs of state.json; a missing or damaged one gives nothing (resume reports it). */
function readCheckpointSummary(dir: string, files: HostFiles): CheckpointSummary {
  const none: CheckpointSummary = { pending: [], awaiting: null, lanes: null };
  const text = readCheckpointFile(join(dir, "state.json"), files);
  if (text === undefined) return none;
  try {
    const cp = JSON.parse(text) as { pending?: unknown; snapshot?: { status?: unknown; lastAt?: unknown; awaiting?: { kind?: unknown; phase?: unknown; attempt?: unknown } | null } };
    const pending = Array.isArray(cp.pending) ? cp.pending.filter((e): e is RunEvent => typeof e === "object" && e !== null && typeof (e as RunEvent).seq === "number" && typeof (e as RunEvent).type === "string") : [];
    const a = cp.snapshot?.awaiting;
    const lastAt = cp.snapshot?.lastAt;
    const awaiting =
      a && (a.kind === "phase" || a.kind === "retry") && typeof a.phase === "string" && cp.snapshot?.status !== "done"
        ? { phase: a.phase, attempt: typeof a.attempt === "number" ? a.attempt : 1, since: typeof lastAt === "number" && Number.isFinite(lastAt) ? new Date(lastAt).toISOString() : null }
        : null;
    return { pending, awaiting, lanes: lanesOf(cp.snapshot) };
  } catch {
    return none;
  }
}

function headlineOf(state: RunState, summary: RunSummary, runId: string): string {
  const where = `iteration ${summary.iteration}${summary.phase === null ? "" : `, phase ${summary.phase}`}`;
  switch (state) {
    case "running":
      return `running: ${where}`;
    case "interrupted": {
      const at = summary.interrupted;
      const place = at === null ? where : `iteration ${at.iteration}${at.phase === null ? "" : `, phase ${at.phase}`}`;
      return `interrupted (${at?.signal ?? "signal"}) at ${place} — resume with phaseloop resume ${runId}`;
    }
    case "crashed":
      return `crashed at ${where} — resume with phaseloop resume ${runId}`;
    case "awaiting answer":
      return `awaiting answer: phase ${summary.question?.phase ?? "?"} asks: ${summary.question?.question ?? ""} — answer with phaseloop resume ${runId} --answer "…"`;
    case "empty":
      return "no events yet";
    default: {
      const finished = summary.finished;
      if (finished === null) return state;
      return `${finished.outcome}: ${formatReason(finished.reason)}`;
    }
  }
}
