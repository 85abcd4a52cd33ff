/**
 * What `phaseloop status` says about a run, folded from its events one at a
 * time. The fold keeps only counters and the latest of each thing, so a log of
 * any length is summed up in constant memory (tasks excepted: one entry each).
 */
import type { ErrorClass } from "../pipeline/spec.ts";
import type { RunEvent, RunOutcome, StopReason } from "../run/run-events.ts";

export interface LastError {
  iteration: number;
  phase: string;
  attempt: number;
  error: ErrorClass | null;
  message: string | null;
  exit_code: number | null;
  at: string;
}

export interface RunSummary {
  run: string | null;
  pipeline: string | null;
  file: string | null;
  version: string | null;
  max_iterations: number | null;
  started_at: string | null;
  last_event_at: string | null;
  /** Events read (output lines are not in the log). */
  events: number;
  iteration: number;
  /** The phase in flight: started and not yet finished. */
  phase: string | null;
  phase_attempt: number | null;
  /** When the phase in flight started. */
  phase_started_at: string | null;
  /** seq of the last event folded in. */
  last_seq: number;
  phases_run: number;
  succeeded: number;
  failures: number;
  skipped: number;
  retries: number;
  policy_violations: number;
  /** Refusals of the OS sandbox, one per attempt refused (each names what it tried). */
  sandbox_refusals: number;
  hook_failures: number;
  warnings: number;
  resumes: number;
  tokens: number;
  cost_usd: number;
  last_error: LastError | null;
  /** Files changed in the last finished iteration. */
  last_changes: number | null;
  /** Present once the run has finished. */
  finished: {
    outcome: RunOutcome;
    reason: StopReason;
    exit_code: number;
    iterations: number;
    elapsed_ms: number;
    at: string;
  } | null;
  interrupted: { signal: string; iteration: number; phase: string | null; at: string } | null;
  /** An ask phase's question that has no answer yet. */
  question: { phase: string; question: string; iteration: number; at: string } | null;
  tasks: Record<string, { status: "pending" | "done" | "blocked"; attempts: number; reason: string | null }>;
}

export function emptyRunSummary(): RunSummary {
  return {
    run: null,
    pipeline: null,
    file: null,
    version: null,
    max_iterations: null,
    started_at: null,
    last_event_at: null,
    events: 0,
    iteration: 0,
    phase: null,
    phase_attempt: null,
    phase_started_at: null,
    last_seq: 0,
    phases_run: 0,
    succeeded: 0,
    failures: 0,
    skipped: 0,
    retries: 0,
    policy_violations: 0,
    sandbox_refusals: 0,
    hook_failures: 0,
    warnings: 0,
    resumes: 0,
    tokens: 0,
    cost_usd: 0,
    last_error: null,
    last_changes: null,
    finished: null,
    interrupted: null,
    question: null,
    tasks: {},
  };
}

/** Adds one event to the summary (mutates it: the fold runs over 100,000 events). */
export function addToRunSummary(summary: RunSummary, event: RunEvent): RunSummary {
  summary.events += 1;
  summary.run ??= event.run;
  summary.last_event_at = event.at;
  if (event.seq > summary.last_seq) summary.last_seq = event.seq;
  switch (event.type) {
    case "run.started":
      summary.pipeline = event.pipeline;
      summary.file = event.file;
      summary.version = event.version;
      summary.max_iterations = event.max_iterations;
      summary.started_at ??= event.at;
      break;
    case "run.resumed":
      summary.resumes += 1;
      summary.interrupted = null;
      // A run resumed after it finished is running again.
      summary.finished = null;
      summary.iteration = Math.max(summary.iteration, event.iteration);
      summary.phase = null;
      summary.phase_attempt = null;
      break;
    case "iteration.started":
      summary.iteration = event.iteration;
      break;
    case "phase.started":
      summary.iteration = Math.max(summary.iteration, event.iteration);
      summary.phase = event.phase;
      summary.phase_attempt = event.attempt;
      summary.phase_started_at = event.at;
      break;
    case "phase.finished":
      summary.phases_run += 1;
      summary.tokens += event.tokens;
      summary.cost_usd += event.cost_usd;
      if (event.status === "failed") {
        summary.failures += 1;
        summary.last_error = {
          iteration: event.iteration,
          phase: event.phase,
          attempt: event.attempt,
          error: event.error,
          message: event.message,
          exit_code: event.exit_code,
          at: event.at,
        };
      } else if (event.status === "succeeded") summary.succeeded += 1;
      else if (event.status === "skipped") summary.skipped += 1;
      if (summary.phase === event.phase) {
        summary.phase = null;
        summary.phase_attempt = null;
      }
      break;
    case "phase.skipped":
      summary.skipped += 1;
      break;
    case "phase.retry":
      summary.retries += 1;
      break;
    case "policy.violation":
      summary.policy_violations += 1;
      break;
    case "sandbox.refused":
      summary.sandbox_refusals += event.refused.length;
      break;
    case "hook.finished":
      if (!event.ok) summary.hook_failures += 1;
      break;
    case "iteration.finished":
      summary.last_changes = event.changes.length;
      break;
    case "task.updated":
      summary.tasks[event.task] = { status: event.status, attempts: event.attempts, reason: event.reason };
      break;
    case "question.asked":
      summary.question = { phase: event.phase, question: event.question, iteration: event.iteration, at: event.at };
      break;
    case "question.answered":
      summary.question = null;
      break;
    case "note":
      if (event.level === "warning") summary.warnings += 1;
      break;
    case "run.interrupted":
      summary.interrupted = { signal: event.signal, iteration: event.iteration, phase: event.phase, at: event.at };
      break;
    case "run.finished":
      summary.finished = {
        outcome: event.outcome,
        reason: event.reason,
        exit_code: event.exit_code,
        iterations: event.iterations,
        elapsed_ms: event.elapsed_ms,
        at: event.at,
      };
      // The run's own totals are authoritative (a resume may not replay usage).
      summary.tokens = event.tokens;
      summary.cost_usd = event.cost_usd;
      summary.phase = null;
      summary.phase_attempt = null;
      break;
    case "phase.output":
      break;
  }
  return summary;
}

/** The run's state as `status` reports it. */
export type RunState = "complete" | "blocked" | "failed" | "stopped" | "running" | "interrupted" | "crashed" | "awaiting answer" | "empty";

/**
 * Finished runs say their outcome. An unfinished run is running only while a
 * live process holds the lock for it; otherwise it was interrupted (it said
 * so) or it crashed (it just stopped writing).
 */
export function runStateOf(summary: RunSummary, lockHeldByLiveProcess: boolean): RunState {
  if (summary.finished !== null) return summary.finished.outcome;
  if (summary.events === 0 && !lockHeldByLiveProcess) return "empty";
  if (lockHeldByLiveProcess) return "running";
  if (summary.question !== null) return "awaiting answer";
  return summary.interrupted !== null ? "interrupted" : "crashed";
}
