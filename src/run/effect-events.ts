/** The run events that effects imply by themselves, needing no work to carry out. */
import { exitCodeFor } from "../machine/stop-logic.ts";
import type { Effect, Snapshot } from "../machine/types.ts";
import type { EventInput } from "./event-log.ts";

/** The event an effect implies, given the snapshot of the transition that made it; undefined for none. */
export function eventForEffect(e: Effect, s: Snapshot): EventInput | undefined {
  switch (e.type) {
    case "phase.skipped":
      return { type: "phase.skipped", iteration: e.iteration, phase: e.phase, reason: e.reason };
    case "group.started":
      // a group is a phase of its own: it runs no process (its members have their own folders)
      return { type: "phase.started", iteration: e.iteration, phase: e.group, attempt: 1, kind: "group", dir: "", command: [], members: e.members, join: e.join };
    case "group.finished":
      return {
        type: "phase.finished",
        iteration: e.iteration,
        phase: e.group,
        attempt: 1,
        status: e.status,
        error: e.status === "failed" ? "join_failed" : null,
        message: e.message,
        exit_code: null,
        duration_ms: e.duration_ms,
        tokens: 0,
        cost_usd: 0,
        output: { succeeded: e.succeeded, failed: e.failed, skipped: e.skipped },
        changes: [],
        join: e.join,
      };
    case "phase.exhausted":
      return { type: "note", level: "warning", message: `phase "${e.phase}" was entered ${e.visits} time${e.visits === 1 ? "" : "s"} this iteration (max_visits): ${e.goto ? `going to "${e.goto}"` : `stopping ${e.stop}`}: ${e.reason}` };
    case "phase.error":
      return { type: "note", level: "warning", message: e.message };
    case "note":
      return { type: "note", level: e.level, message: e.message };
    case "iteration.begin":
      return { type: "iteration.started", iteration: e.iteration, task: e.task };
    case "iteration.end":
      return { type: "iteration.finished", iteration: e.iteration, changes: e.changes, task: e.record.task };
    case "task.update":
      return { type: "task.updated", task: e.task, status: e.status, attempts: e.attempts, reason: e.reason };
    case "wait":
      return { type: "phase.retry", phase: e.phase, attempt: e.attempt, delay_ms: e.ms, error: e.error, message: e.message };
    case "stop":
      return {
        type: "run.finished",
        outcome: e.outcome,
        reason: e.reason,
        exit_code: exitCodeFor(e.outcome),
        iterations: s.iteration,
        tokens: s.tokens,
        cost_usd: s.costUsd,
        elapsed_ms: s.elapsedMs,
      };
    default:
      return undefined;
  }
}
