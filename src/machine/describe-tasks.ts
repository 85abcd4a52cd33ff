/**
 * A task queue as a list: each task with its status and whether it can start
 * now, in the order the queue takes them. The same rules as the queue itself
 * (task-queue.ts): a blocked or unknown dependency blocks its dependents,
 * transitively; a task is ready when it is pending and every dependency is done.
 */
import type { TaskItem } from "./types.ts";

export interface TaskRow {
  id: string;
  title: string;
  priority: number | null;
  depends_on: string[];
  status: "pending" | "done" | "blocked";
  /** Pending, and every dependency is done: a run (or a CI job) can start it now. */
  ready: boolean;
  /** Why a task is blocked, when a dependency blocks it. */
  reason: string | null;
  /** The id made safe for a git branch or an artifact name: lower case, [a-z0-9._-]. */
  slug: string;
}

/** The queue in the order it is worked: priority then file order, or file order alone. */
export function describeTasks(tasks: readonly TaskItem[], order: "priority" | "file" = "priority"): TaskRow[] {
  const rows = tasks.map((t, i) => ({
    row: {
      id: t.id,
      title: t.title,
      priority: t.priority,
      depends_on: [...t.depends_on],
      status: t.done ? "done" : t.blocked ? "blocked" : "pending",
      ready: false,
      reason: null,
      slug: taskSlug(t.id),
    } as TaskRow,
    order: i,
  }));
  const byId = new Map(rows.map((r) => [r.row.id, r.row]));
  for (let changed = true; changed; ) {
    changed = false;
    for (const { row } of rows) {
      if (row.status !== "pending") continue;
      const dep = row.depends_on.find((id) => !byId.has(id) || byId.get(id)!.status === "blocked");
      if (dep === undefined) continue;
      row.status = "blocked";
      row.reason = byId.has(dep) ? `dependency ${dep} is blocked` : `dependency ${dep} does not exist`;
      changed = true;
    }
  }
  for (const { row } of rows) row.ready = row.status === "pending" && row.depends_on.every((id) => byId.get(id)?.status === "done");
  rows.sort((a, b) => (order === "priority" ? (a.row.priority ?? Infinity) - (b.row.priority ?? Infinity) : 0) || a.order - b.order);
  return rows.map((r) => r.row);
}

/**
 * A branch- and artifact-safe name for a task id, distinct for distinct ids:
 * an id already in that form (`US-001`, `fix-login`) is its own slug; any
 * other keeps a readable part and adds `+` and the id's UTF-8 bytes in hex
 * (`Fix the Login!` → `Fix-the-Login+466978…`), so `a b` and `a-b` never
 * share a branch. Never empty.
 */
export function taskSlug(id: string): string {
  const readable = id
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "")
    .replace(/\.{2,}/g, ".");
  if (readable === id && id !== "" && !id.endsWith(".lock")) return id;
  let hex = "";
  for (const b of new TextEncoder().encode(id)) hex += b.toString(16).padStart(2, "0");
  return `${readable === "" ? "task" : readable}+${hex}`;
}

/** The queue as a table: id, priority, status, dependencies, title. */
export function formatTaskTable(rows: readonly TaskRow[]): string {
  const head = ["ID", "PRIORITY", "STATUS", "DEPENDS ON", "TITLE"];
  const cells = rows.map((r) => [r.id, r.priority === null ? "-" : String(r.priority), r.status === "pending" ? (r.ready ? "ready" : "waiting") : r.status, r.depends_on.length ? r.depends_on.join(", ") : "-", r.title]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i === c.length - 1 ? v : v.padEnd(widths[i]!))).join("  ").trimEnd();
  return [line(head), ...cells.map(line)].join("\n") + "\n";
}
