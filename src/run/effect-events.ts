/** The run events that effects imply by themselves, needing no work to carry out. */
import { exitCodeFor } from "../machine/stop-logic.ts";
import type { Effect, Snapshot } from "../machine/types.ts";
import type { EventInput } from "./event-log.ts";

/** The event an effect implies, given the snapshot of the transition that made it; undefined for none. */
export function eventForEffect(e: Effect, s: Snapshot): EventInput | undefined {
  switch (e.type) {
    case "phase.skipped":
      return { type: "phase.skipped", iteration: e.iteration, phase: e.phase, reason: e.reason };
    case "group.finished": {
      const parts = [`${e.succeeded.length} succeeded`, `${e.failed.length} failed${e.failed.length ? ` (${e.failed.join(", ")})` : ""}`];
      if (e.skipped.length) parts.push(`${e.skipped.length} skipped`);
      return { type: "note", level: e.status === "failed" ? "warning" : "info", message: `group "${e.group}" ${e.status} (join ${e.join}): ${parts.join(", ")}` };
    }
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
