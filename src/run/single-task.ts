/**
 * `run --task ID`: one task's loop. The machine is the pipeline's with its
 * queue narrowed to that task (as `tasks.only` would) and without the final
 * gate, which belongs to the whole queue: the run completes when the task is
 * done. The task id is kept in run.json, so `resume` narrows it again.
 */
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { describeTasks } from "../machine/describe-tasks.ts";
import type { Machine, TaskItem } from "../machine/types.ts";

/** Why the task cannot be run on its own now, or undefined when it can. */
export function checkTaskChoice(machine: Machine, tasks: readonly TaskItem[] | undefined, id: string): string | undefined {
  if (!machine.tasks || !tasks) return `--task needs a pipeline with a task queue (\`tasks:\`), and ${machine.file} has none`;
  const rows = describeTasks(tasks, machine.tasks.order);
  const row = rows.find((r) => r.id === id);
  if (!row) {
    const hint = didYouMean(id, rows.map((r) => r.id));
    return `no task "${id}" in the queue (${rows.length} task${rows.length === 1 ? "" : "s"})${hint ? `; ${hint}` : ""}`;
  }
  const byId = new Map(rows.map((r) => [r.id, r]));
  const waiting = row.depends_on.filter((d) => byId.get(d)?.status !== "done");
  if (waiting.length > 0) {
    return `task "${id}" depends on ${waiting.map((d) => `"${d}" (${byId.get(d)?.status ?? "no such task"})`).join(", ")}, not done yet; run it once ${waiting.length === 1 ? "that task is" : "those tasks are"} done (phaseloop tasks --ready lists what can start now)`;
  }
  return undefined;
}

/** The machine that works `id` only and completes when it is done. */
export function machineForTask(machine: Machine, id: string): Machine {
  if (!machine.tasks) return machine;
  return { ...machine, tasks: { ...machine.tasks, only: { parts: [{ kind: "text", text: id }] }, finalGate: undefined } };
}
