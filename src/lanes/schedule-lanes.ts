/**
 * The task queue of a run with parallel lanes, as views over the machine's
 * rules (task-queue.ts, stop-logic.ts; the lane scheduler itself is
 * machine/lanes.ts): which tasks start now, when the queue is finished, and
 * the machine and limits a lane's loop keeps for itself (run/lane-loop.ts). Pure.
 *
 * In a run with lanes a task is `done` only once its branch is merged, so
 * "every dependency done" is "every dependency merged".
 */
import { limitReached } from "../machine/stop-logic.ts";
import { blockUnworkable, queueEnd, readyInOrder } from "../machine/task-queue.ts";
import type { Machine, Snapshot, StopReason, TaskState } from "../machine/types.ts";

export interface QueueView {
  tasks: readonly TaskState[];
  /** Tasks in a lane now (running their loop or being merged). */
  running: readonly string[];
  parallel: number;
  order: "priority" | "file";
  /** Only this task (tasks.only); undefined for all. */
  only?: string;
}

/**
 * Pending tasks whose dependency is blocked or missing, blocked in turn
 * (transitively), with the reason; the list is a new one, the input unchanged.
 * The task queue's rule (task-queue.ts).
 */
export function blockDependents(tasks: readonly TaskState[]): { tasks: TaskState[]; blocked: { task: string; reason: string }[] } {
  const out = tasks.map((t) => ({ ...t }));
  return { tasks: out, blocked: blockUnworkable(out) };
}

/** The tasks to start now, in the order they start: at most `parallel` lanes in all. */
export function readyTasks(v: QueueView): string[] {
  const slots = v.parallel - v.running.length;
  if (slots <= 0) return [];
  return readyInOrder(v.tasks, v.order, v.only, new Set(v.running)).slice(0, slots).map((t) => t.id);
}

/** Whether the queue is finished: every task done, or nothing left that can start. */
export function queueState(v: QueueView): { kind: "working" } | { kind: "all-done" } | { kind: "blocked"; message: string } {
  if (v.running.length > 0 || readyTasks(v).length > 0) return { kind: "working" };
  return queueEnd(v.tasks, v.only);
}

/** The run-wide limits all lanes share (max_duration, budget) and the totals so far. */
export interface SharedLimits {
  maxDurationMs: number | null;
  budgetTokens: number | null;
  budgetCostUsd: number | null;
}

/** The first run-wide limit the lanes' totals reach, or null: the stop logic's limits (stop-logic.ts), over all lanes. */
export function sharedLimitReached(limits: SharedLimits, totals: { tokens: number; costUsd: number; elapsedMs: number }): StopReason | null {
  return limitReached(limits, totals, " (all lanes)");
}

/**
 * The machine one lane runs: the queue of its one task, without the final
 * gate (it runs once, on the merged result), the run-wide limits (the lane
 * runner checks them over all lanes) and the run's end hooks (they run once,
 * when the run ends). Its iterations, no_progress and consecutive_failures
 * are its own.
 */
export function laneMachine(m: Machine): Machine {
  if (!m.tasks) return m;
  const source = m.tasks.source.kind === "json" ? { ...m.tasks.source, writeBack: false } : m.tasks.source;
  return {
    ...m,
    tasks: { ...m.tasks, source, finalGate: undefined, only: undefined, parallel: 1 },
    limits: { ...m.limits, maxDurationMs: null, budgetTokens: null, budgetCostUsd: null },
    hooks: { before_iteration: m.hooks.before_iteration, after_iteration: m.hooks.after_iteration },
  };
}

/** A lane's own snapshot limits, from the run's: the shared ones are the lane runner's to check. */
export function laneLimits(limits: Snapshot["limits"]): Snapshot["limits"] {
  return { ...limits, maxDurationMs: null, budgetTokens: null, budgetCostUsd: null };
}
