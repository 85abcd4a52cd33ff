/**
 * Where an iteration ends: history, task attempts, no_progress; and the stop
 * at max_iterations. Where the next one begins is control-flow.ts.
 */
import type { HistoryEntry } from "../pipeline/context.ts";
import { CAPS, type Draft } from "./draft.ts";
import { stop } from "./stop-logic.ts";

export function stopLimit(d: Draft): void {
  const n = d.s.limits.maxIterations;
  stop(d, "stopped", { code: "max_iterations", message: `reached max_iterations (${n}) without completing` });
}

/** Close the current iteration. Returns true when the run stopped or waits for a hook. */
export function endIteration(d: Draft): boolean {
  const s = d.s;
  if (!s.iterationOpen) return false;
  s.iterationOpen = false;
  const record: HistoryEntry = { iteration: s.iteration, phases: s.iterationPhases, changes: s.iterationChanges, task: s.currentTask };
  s.history.push(record);
  s.filesChanged = rememberFiles(s.filesChanged ?? {}, s.iterationChanges, s.iteration);
  if (s.history.length > CAPS.history) s.history.splice(0, s.history.length - CAPS.history);
  d.fx.push({ type: "iteration.end", iteration: s.iteration, changes: s.iterationChanges, record });
  // a task that was worked on and not finished spent one attempt
  const task = s.tasks?.find((t) => t.id === s.currentTask);
  if (task && task.status === "pending") {
    task.attempts += 1;
    const rejection = task.rejection ?? null;
    task.rejection = null;
    if (rejection) task.notes = [...task.notes, `[REJECTED] ${rejection}`];
    if (task.attempts >= s.limits.taskAttempts) {
      task.status = "blocked";
      task.reason = `not done after ${task.attempts} attempt${task.attempts === 1 ? "" : "s"}${rejection ? `; last: ${rejection}` : ""}`;
      task.notes = [...task.notes, `[BLOCKED] ${task.reason}`];
    }
    d.fx.push({ type: "task.update", task: task.id, status: task.status, attempts: task.attempts, reason: task.status === "blocked" ? task.reason : rejection });
  }
  s.currentTask = null;
  s.counters.noProgress = s.iterationChanges.length === 0 ? s.counters.noProgress + 1 : 0;
  const limit = s.limits.noProgress;
  if (limit !== null && limit > 0 && s.counters.noProgress >= limit) {
    stop(d, "stopped", { code: "no_progress", message: `no file changed in ${s.counters.noProgress} iteration${s.counters.noProgress === 1 ? "" : "s"} in a row (no_progress: ${limit})` });
    return true;
  }
  return false;
}

/** The run's changed files with the iteration that last changed each; the oldest go first past the cap. */
function rememberFiles(files: Record<string, number>, changes: string[], iteration: number): Record<string, number> {
  const out: Record<string, number> = { ...files };
  for (const path of changes) {
    delete out[path]; // re-inserted last: keys run from the least to the most recently changed
    out[path] = iteration;
  }
  const keys = Object.keys(out);
  for (const path of keys.slice(0, Math.max(0, keys.length - CAPS.files))) delete out[path];
  return out;
}
