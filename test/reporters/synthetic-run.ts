import type { RunEvent } from "../../src/run/run-events.ts";

type Body = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, "v" | "seq" | "at" | "run"> : never) : never;

/** Builds a run's events with sequence numbers and times one second apart from a fixed start. */
export function buildEvents(bodies: readonly Body[], run = "20261101-120400-ab12", start = Date.UTC(2026, 10, 1, 12, 4, 0)): RunEvent[] {
  return bodies.map((body, index) => ({ v: 1, seq: index + 1, at: new Date(start + index * 1000).toISOString(), run, ...body }) as RunEvent);
}

/** A short but complete run: two iterations, output, a transient failure and its retry, a skip, a note, a policy warning, the outcome. */
export function sampleRun(): RunEvent[] {
  return buildEvents([
    { type: "run.started", pipeline: "execute-review", file: "pipelines/execute-review.yaml", hash: "abc", workdir: "/w", params: { task_file: "TASK.md" }, max_iterations: 5, phases: ["execute", "review", "verify"], version: "0.1.0" },
    { type: "iteration.started", iteration: 1, task: null },
    { type: "phase.started", iteration: 1, phase: "execute", attempt: 1, kind: "agent", dir: "0001-execute", command: ["claude", "-p"] },
    { type: "phase.output", phase: "execute", stream: "stdout", line: "Reading TASK.md" },
    { type: "phase.output", phase: "execute", stream: "stderr", line: "HTTP 503 Service Unavailable" },
    { type: "phase.finished", iteration: 1, phase: "execute", attempt: 1, status: "failed", error: "transient", message: "HTTP 503", exit_code: 1, duration_ms: 4100, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    { type: "phase.retry", phase: "execute", attempt: 2, delay_ms: 20000, error: "transient", message: "HTTP 503" },
    { type: "phase.started", iteration: 1, phase: "execute", attempt: 2, kind: "agent", dir: "0002-execute", command: ["claude", "-p"] },
    { type: "phase.output", phase: "execute", stream: "stdout", line: "STATUS: INCOMPLETE" },
    { type: "phase.finished", iteration: 1, phase: "execute", attempt: 2, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 61200, tokens: 1200, cost_usd: 0.02, output: { status: "INCOMPLETE" }, changes: ["src/a.ts"] },
    { type: "policy.violation", phase: "execute", paths: ["README.md"], action: "warn" },
    { type: "phase.skipped", iteration: 1, phase: "review", reason: "when is false" },
    { type: "phase.started", iteration: 1, phase: "verify", attempt: 1, kind: "run", dir: "0003-verify", command: "npm test" },
    { type: "phase.finished", iteration: 1, phase: "verify", attempt: 1, status: "failed", error: "exit_nonzero", message: null, exit_code: 1, duration_ms: 2500, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    { type: "iteration.finished", iteration: 1, changes: ["src/a.ts"], task: null },
    { type: "hook.finished", hook: "after_iteration", ok: true, exit_code: 0, duration_ms: 300, message: null },
    { type: "iteration.started", iteration: 2, task: null },
    { type: "phase.started", iteration: 2, phase: "execute", attempt: 1, kind: "agent", dir: "0004-execute", command: ["claude", "-p"] },
    { type: "phase.finished", iteration: 2, phase: "execute", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 3000, tokens: 800, cost_usd: 0.011, output: { status: "COMPLETE" }, changes: [] },
    { type: "note", level: "warning", message: "Budget 80% used" },
    { type: "phase.started", iteration: 2, phase: "verify", attempt: 1, kind: "run", dir: "0005-verify", command: "npm test" },
    { type: "phase.finished", iteration: 2, phase: "verify", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 2000, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    { type: "iteration.finished", iteration: 2, changes: [], task: null },
    { type: "run.finished", outcome: "complete", reason: { code: "transition", message: "verify passed" }, exit_code: 0, iterations: 2, tokens: 2000, cost_usd: 0.031, elapsed_ms: 75000 },
  ]);
}
