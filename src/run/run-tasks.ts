/** The task effects: reading the task source (tasks.load) and writing a task's new state back (task.update). */
import type { Effect, MachineEvent, TaskItem } from "../machine/types.ts";
import { loadTasks, writeBackTask } from "./load-tasks.ts";
import type { RunContext } from "./run-context.ts";

/** Answer tasks.load: the tasks read before the run started, or the task source now. */
export async function loadRunTasks(ctx: RunContext, preloaded: TaskItem[] | undefined): Promise<MachineEvent> {
  try {
    const tasks = preloaded ?? (await loadTasks(ctx.machine.tasks!, ctx.info.workdir));
    return { type: "tasks.loaded", at: ctx.host.clock.now(), tasks };
  } catch (error) {
    ctx.emit({ type: "note", level: "warning", message: `cannot load the tasks: ${(error as Error).message}` });
    return { type: "tasks.loaded", at: ctx.host.clock.now(), tasks: [] };
  }
}

/** Carry out task.update: the task file says what the machine decided. */
export function writeRunTask(e: Extract<Effect, { type: "task.update" }>, ctx: RunContext): void {
  try {
    if (ctx.machine.tasks) writeBackTask(ctx.machine.tasks, ctx.info.workdir, e, ctx.host.files);
  } catch (error) {
    ctx.emit({ type: "note", level: "warning", message: `cannot write task ${e.task} back: ${(error as Error).message}` });
  }
}
