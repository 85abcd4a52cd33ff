/**
 * The task queue: which task is next (dependencies, priority, `only`), marking
 * tasks done or blocked, and the final gate once every task is done.
 */
import { contextOf, phaseNamed, renderIn, type Draft } from "./draft.ts";
import type { TaskItem, TaskState } from "./types.ts";

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
  const byId = new Map(tasks.map((t) => [t.id, t]));
  // a blocked (or unknown) dependency blocks its dependents, transitively
  for (let changed = true; changed; ) {
    changed = false;
    for (const t of tasks) {
      if (t.status !== "pending") continue;
      const dep = t.depends_on.find((id) => !byId.has(id) || byId.get(id)!.status === "blocked");
      if (dep === undefined) continue;
      t.status = "blocked";
      t.reason = byId.has(dep) ? `dependency ${dep} is blocked` : `dependency ${dep} does not exist`;
      d.fx.push({ type: "task.update", task: t.id, status: "blocked", attempts: t.attempts, reason: t.reason });
      changed = true;
    }
  }
  const only = onlyTask(d);
  const scope = only !== undefined ? tasks.filter((t) => t.id === only) : tasks;
  if (only !== undefined && scope.length === 0) return { kind: "blocked", message: `no task "${only}" in the queue` };
  const ready = scope
    .filter((t) => t.status === "pending" && t.depends_on.every((id) => byId.get(id)?.status === "done"))
    .sort((a, b) => (d.m.tasks!.order === "priority" ? (a.priority ?? Infinity) - (b.priority ?? Infinity) : 0) || a.order - b.order);
  if (ready[0]) return { kind: "next", task: ready[0].id };
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
