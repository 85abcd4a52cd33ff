/**
 * The task queue of a pipeline, read from the workdir, with a task source
 * that cannot be used reported as a diagnostic located at `tasks.source` in
 * the pipeline (the file that wrote it, for a pipeline that extends others).
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { CompiledTasks, TaskItem } from "../machine/types.ts";
import type { LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { parsePipelineText, spanOfPointer } from "../pipeline/parse-pipeline-text.ts";
import { loadTasks, TaskSourceError } from "./load-tasks.ts";

export type TaskQueueRead = { ok: true; tasks: TaskItem[] } | { ok: false; diagnostics: Diagnostic[] };

export async function readTaskQueue(spec: CompiledTasks, workdir: string, loaded: Pick<LoadedPipeline, "file" | "text" | "locate">): Promise<TaskQueueRead> {
  try {
    return { ok: true, tasks: await loadTasks(spec, workdir) };
  } catch (error) {
    if (!(error instanceof TaskSourceError)) throw error;
    const pointer = "/tasks/source";
    const where = loaded.locate ? loaded.locate(pointer) : { file: loaded.file, ...spanOfPointer(parsePipelineText(loaded.text, loaded.file).document, loaded.text, pointer) };
    const code = /cycle/.test(error.message) ? "TASK_CYCLE" : "TASK_SOURCE";
    return { ok: false, diagnostics: [{ code, severity: "error", message: error.message, file: loaded.file, ...where, pointer }] };
  }
}
