import type { PhaseContext, RunContext, TaskContext } from "../pipeline/context.ts";
import type { JsonValue } from "../pipeline/spec.ts";
import type { Machine, Snapshot, TaskState } from "./types.ts";

/** The result of a phase that has not run yet. */
export function pendingPhase(): PhaseContext {
  return { status: "pending", exit_code: null, output: {}, text: "", error: null, attempts: 0, duration_ms: 0, tokens: 0, cost_usd: 0, iteration: 0, message: null, denied: [] };
}

export function taskContext(t: TaskState): TaskContext {
  return { id: t.id, title: t.title, body: t.body, status: t.status, attempts: t.attempts, priority: t.priority, depends_on: t.depends_on, notes: t.notes };
}

/**
 * The context expressions and templates see (src/pipeline/context.ts), built
 * from the snapshot. `phase` makes that phase's result available bare
 * (`status`, `exit_code`, `output`, `text`) for its `next` rules.
 */
export function buildContext(machine: Machine, snapshot: Snapshot, phase?: string): RunContext {
  const phases: Record<string, PhaseContext> = {};
  for (const p of machine.phases) phases[p.name] = snapshot.results[p.name] ?? pendingPhase();
  const own = phase !== undefined ? (phases[phase] ?? pendingPhase()) : pendingPhase();
  const tasks = snapshot.tasks ?? [];
  const current = tasks.find((t) => t.id === snapshot.currentTask);
  return {
    iteration: snapshot.iteration,
    params: snapshot.params,
    phases,
    status: own.status,
    exit_code: own.exit_code,
    output: own.output,
    text: own.text,
    error: own.error,
    attempts: own.attempts,
    answer: own.answer ?? null,
    changes: snapshot.iterationChanges,
    history: snapshot.history,
    files: snapshot.filesChanged ?? {},
    last_failure: snapshot.lastFailure,
    run: { id: snapshot.runId, tokens: snapshot.tokens, cost_usd: snapshot.costUsd, elapsed_ms: snapshot.elapsedMs, artifacts: `${snapshot.info.workdir.replace(/\/+$/, "")}/.phaseloop/runs/${snapshot.runId}/artifacts` },
    task: current ? taskContext(current) : null,
    tasks: {
      total: tasks.length,
      done: tasks.filter((t) => t.status === "done").length,
      blocked: tasks.filter((t) => t.status === "blocked").length,
      pending: tasks.filter((t) => t.status === "pending").length,
      items: tasks.map(taskContext),
    },
    env: snapshot.info.env,
    pipeline: snapshot.info.pipeline,
    workdir: snapshot.info.workdir,
  };
}

/** The context as the JSON record the evaluator takes. */
export function asRecord(context: RunContext): Record<string, JsonValue> {
  return context as unknown as Record<string, JsonValue>;
}
