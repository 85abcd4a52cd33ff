/**
 * The task queue: which task is next (dependencies, priority, `only`), marking
 * tasks done or blocked, and the final gate once every task is done.
 */
import { contextOf, phaseNamed, renderIn, type Draft } from "./draft.ts";
import { nextIteration, stopLimit } from "./iteration.ts";
import { runPhase } from "./phase-results.ts";
import { checkBudgetAndDuration, stop } from "./stop-logic.ts";
import type { PhaseResult, TaskItem, TaskState } from "./types.ts";

/** A task as read from the task file, as the snapshot keeps it. */
export function toTaskState(t: TaskItem, order: number): TaskState {
  return {
    id: t.id,
    title: t.title,
    body: t.body,
    status: t.done ? "done" : t.blocked ? "blocked" : "pending",
    attempts: t.attempts,
    priority: t.priority,
    depends_on: t.depends_on,
    notes: t.notes,
    order,
    reason: null,
  };
}

export function onlyTask(d: Draft): string | undefined {
  const t = d.m.tasks?.only;
  if (!t) return undefined;
  const r = renderIn(d, t, contextOf(d));
  return r.ok && r.value.trim() !== "" ? r.value.trim() : undefined;
}

/** What the queue holds next: a task to work on, all done, or nothing workable. */
export function queue(d: Draft): { kind: "next"; task: string } | { kind: "all-done" } | { kind: "blocked"; message: string } {
  const tasks = d.s.tasks!;
  for (const b of blockUnworkable(tasks)) {
    const t = tasks.find((x) => x.id === b.task)!;
    d.fx.push({ type: "task.update", task: t.id, status: "blocked", attempts: t.attempts, reason: t.reason });
  }
  const only = onlyTask(d);
  const ready = readyInOrder(tasks, d.m.tasks!.order, only);
  if (ready[0]) return { kind: "next", task: ready[0].id };
  return queueEnd(tasks, only);
}

/**
 * A blocked (or unknown) dependency blocks its dependents, transitively: the
 * pending tasks it reaches become blocked, with the reason (in place). The
 * tasks it blocked, in the order it blocked them.
 */
export function blockUnworkable(tasks: TaskState[]): { task: string; reason: string }[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const blocked: { task: string; reason: string }[] = [];
  for (let changed = true; changed; ) {
    changed = false;
    for (const t of tasks) {
      if (t.status !== "pending") continue;
      const dep = t.depends_on.find((id) => !byId.has(id) || byId.get(id)!.status === "blocked");
      if (dep === undefined) continue;
      t.status = "blocked";
      t.reason = byId.has(dep) ? `dependency ${dep} is blocked` : `dependency ${dep} does not exist`;
      blocked.push({ task: t.id, reason: t.reason });
      changed = true;
    }
  }
  return blocked;
}

/**
 * The tasks that can be worked now, in the order they are taken: pending,
 * every dependency done, `only` (when set) the one task, none of `busy`;
 * by priority (then file order) or by file order.
 */
export function readyInOrder(tasks: readonly TaskState[], order: "priority" | "file", only?: string, busy: ReadonlySet<string> = new Set()): TaskState[] {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return tasks
    .filter((t) => (only === undefined || t.id === only) && t.status === "pending" && !busy.has(t.id) && t.depends_on.every((id) => byId.get(id)?.status === "done"))
    .sort((a, b) => (order === "priority" ? (a.priority ?? Infinity) - (b.priority ?? Infinity) : 0) || a.order - b.order);
}

/** A queue with nothing to take: every task done, or why it cannot go on. */
export function queueEnd(tasks: readonly TaskState[], only?: string): { kind: "all-done" } | { kind: "blocked"; message: string } {
  const scope = only !== undefined ? tasks.filter((t) => t.id === only) : tasks;
  if (only !== undefined && scope.length === 0) return { kind: "blocked", message: `no task "${only}" in the queue` };
  const pending = scope.filter((t) => t.status === "pending");
  const blocked = scope.filter((t) => t.status === "blocked");
  if (pending.length === 0 && blocked.length === 0) return { kind: "all-done" };
  if (pending.length > 0) return { kind: "blocked", message: `tasks ${pending.map((t) => t.id).join(", ")} wait on dependencies that cannot finish` };
  return { kind: "blocked", message: `${blocked.length} task${blocked.length === 1 ? " is" : "s are"} blocked: ${blocked.map((t) => `${t.id} (${t.reason ?? "blocked"})`).join("; ")}` };
}

export function markTask(d: Draft, status: "done" | "blocked", reason: string): void {
  const s = d.s;
  const t = s.tasks?.find((x) => x.id === s.currentTask);
  if (!t) {
    d.fx.push({ type: "note", level: "warning", message: `a rule marks the current task ${status}, but no task is current` });
    return;
  }
  t.status = status;
  t.reason = status === "blocked" ? reason : null;
  if (status === "blocked") t.notes = [...t.notes, `[BLOCKED] ${reason}`];
  if (status === "done") s.lastDoneTask = t.id;
  d.fx.push({ type: "task.update", task: t.id, status, attempts: t.attempts, reason: t.reason });
}

export function allTasksDone(d: Draft): void {
  const gate = d.m.tasks?.finalGate;
  const only = onlyTask(d);
  if (!gate) return stop(d, "complete", { code: "tasks_done", message: only !== undefined ? `task ${only} is done` : `all ${d.s.tasks!.length} tasks are done` });
  if (!d.s.iterationOpen) {
    // the gate runs within an iteration: the one that finished the last task, or a new one
    if (d.s.iteration >= d.s.limits.maxIterations) return stopLimit(d);
    d.s.iteration += 1;
    d.s.iterationPhases = {};
    d.s.iterationChanges = [];
    d.s.iterationOpen = true;
    d.fx.push({ type: "iteration.begin", iteration: d.s.iteration, task: null });
  }
  d.s.gateRunning = true;
  runPhase(d, phaseNamed(d, gate), 1);
}

export function gateFinished(d: Draft, passed: boolean, r: PhaseResult): void {
  const s = d.s;
  s.gateRunning = false;
  if (passed) return stop(d, "complete", { code: "tasks_done", message: `all ${s.tasks!.length} tasks are done and the final gate "${d.m.tasks!.finalGate}" passed` });
  const reopen = s.tasks!.find((t) => t.id === s.lastDoneTask) ?? [...s.tasks!].reverse().find((t) => t.status === "done");
  if (reopen) {
    reopen.status = "pending";
    reopen.notes = [...reopen.notes, `[REOPENED] the final gate failed: ${r.message ?? r.error ?? "failed"}`];
    d.fx.push({ type: "task.update", task: reopen.id, status: "pending", attempts: reopen.attempts, reason: "the final gate failed" });
    d.fx.push({ type: "note", level: "warning", message: `the final gate failed; task ${reopen.id} is reopened` });
  } else {
    return stop(d, "failed", { code: "transition", message: `the final gate "${d.m.tasks!.finalGate}" failed and there is no task to reopen` });
  }
  // the gate's failure counts toward the breakers like any phase
  const cf = s.limits.consecutiveFailures;
  if (cf !== null && cf > 0 && s.counters.consecutiveFailures >= cf) {
    return stop(d, "stopped", { code: "consecutive_failures", message: `${s.counters.consecutiveFailures} phases failed in a row (consecutive_failures: ${cf})` });
  }
  if (checkBudgetAndDuration(d)) return;
  nextIteration(d);
}
