/**
 * Iterations: where one begins (the next task, the iteration limit, the
 * before_iteration hook), where it ends (history, task attempts, no_progress),
 * and the step from one to the next.
 */
import type { HistoryEntry } from "../pipeline/context.ts";
import { CAPS, phaseNamed, type Draft } from "./draft.ts";
import { runHook } from "./hooks.ts";
import { enterPhase, runPhase } from "./phase-results.ts";
import { stop } from "./stop-logic.ts";
import { allTasksDone, queue } from "./task-queue.ts";

export function beginIteration(d: Draft): void {
  const s = d.s;
  if (d.m.tasks && s.tasks) {
    const q = queue(d);
    if (q.kind === "all-done") return allTasksDone(d);
    if (q.kind === "blocked") return stop(d, "blocked", { code: "tasks_blocked", message: q.message });
    if (s.iteration >= s.limits.maxIterations) return stopLimit(d);
    s.currentTask = q.task;
  } else if (s.iteration >= s.limits.maxIterations) return stopLimit(d);
  s.iteration += 1;
  s.iterationPhases = {};
  s.iterationChanges = [];
  delete s.unhandled; // a new iteration's work is judged on its own
  s.visits = {};
  s.iterationOpen = true;
  d.fx.push({ type: "iteration.begin", iteration: s.iteration, task: s.currentTask });
  if (d.m.hooks.before_iteration && runHook(d, "before_iteration", d.m.hooks.before_iteration.onFailure === "block", "iteration")) return;
  enterPhase(d, d.m.head);
}

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

/** Control enters the loop head: the iteration ends and the next begins. */
export function nextIteration(d: Draft): void {
  // the iteration that finished the last task also runs the final gate
  const gate = d.m.tasks?.finalGate;
  if (gate && d.s.tasks && d.s.iterationOpen && !d.s.gateRunning && queue(d).kind === "all-done") {
    d.s.gateRunning = true;
    d.s.currentTask = null; // the gate checks the whole, not one task
    return runPhase(d, phaseNamed(d, gate), 1);
  }
  if (endIteration(d)) return;
  if (d.m.hooks.after_iteration && runHook(d, "after_iteration", d.m.hooks.after_iteration.onFailure === "block", "next-iteration")) return;
  beginIteration(d);
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
