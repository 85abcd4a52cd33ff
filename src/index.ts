/**
 * phaseloop as a library: load, validate and compile pipelines, drive the
 * state machine, and run pipelines the way the CLI does.
 *
 * ```ts
 * import { loadPipeline, compilePipeline, nodeReadHost } from "phaseloop";
 * const loaded = await loadPipeline("pipelines/hailstone.yaml", nodeReadHost);
 * if (loaded.doc) {
 *   const { machine } = compilePipeline(loaded.doc, { promptFiles: loaded.promptFiles, file: loaded.file });
 * }
 * ```
 *
 * Everything not exported here is internal and may change.
 */
import { readHostOf } from "./host/host.ts";
import { nodeHost } from "./host/node-host.ts";
import type { ReadHost } from "./pipeline/load-pipeline.ts";

// ── the format ───────────────────────────────────────────────────────────────
export type * from "./pipeline/spec.ts";
export type { RunContext, PhaseContext, HistoryEntry, LastFailure, TaskContext, PhaseStatus } from "./pipeline/context.ts";
export { parseDuration, formatDuration } from "./pipeline/duration.ts";

// ── loading and validation ───────────────────────────────────────────────────
export { loadPipeline, validatePipelineText, type LoadedPipeline, type ReadHost } from "./pipeline/load-pipeline.ts";
export { DIAGNOSTIC_CODES, hasErrors, type Diagnostic, type DiagnosticCode, type Severity, type Span } from "./diagnostics/diagnostic.ts";
export { formatDiagnostic, toJsonDiagnostic, sortDiagnostics, SourceMap, type Colorizer, type JsonDiagnostic } from "./diagnostics/format-diagnostic.ts";

/** Reads files from disk for `loadPipeline` (undefined when a file does not exist). */
export const nodeReadHost: ReadHost = readHostOf(nodeHost);

// ── the expression language ──────────────────────────────────────────────────
export { parseExpression, evaluateExpression, parseTemplate, renderTemplate, shellQuote, FUNCTIONS, type Expr, type Template, type EvalResult } from "./expr/index.ts";

// ── the state machine (pure) ─────────────────────────────────────────────────
export { compilePipeline, DEFAULTS } from "./machine/compile-pipeline.ts";
export { transition, initialSnapshot, exitCodeFor } from "./machine/transition.ts";
export { resolveParams } from "./machine/resolve-params.ts";
export { buildContext } from "./machine/build-context.ts";
export { describeMachine, formatMermaid, formatDot } from "./machine/format-graph.ts";
export type { Machine, Snapshot, MachineEvent, Effect, PhaseResult, TaskItem, StopReason, TransitionResult } from "./machine/types.ts";

// ── running ──────────────────────────────────────────────────────────────────
export { startRun, type StartOptions, type StartOutcome } from "./run/start-run.ts";
export { resumeRun, type ResumeOptions } from "./run/resume-run.ts";
export type { RunEvent, RunOutcome, Reporter } from "./run/run-events.ts";
export { createReporter, type ReporterKind } from "./reporters/create-reporter.ts";

// ── the control layer ────────────────────────────────────────────────────────
/**
 * The operations the CLI, the MCP server and `phaseloop ui` share over a
 * workdir's runs: start a run in a process of its own, stop, answer, resume,
 * wait for, list and read runs, validate a pipeline, list the recipes. Errors
 * are `control.ControlError`s with a stable `code`.
 *
 * ```ts
 * import { control } from "phaseloop";
 * const { runId } = await control.startRun({ workdir, pipeline: "loop.yaml", via: "cli" });
 * const { status } = await control.waitForRun(workdir, runId, { timeoutMs: 60_000 });
 * ```
 */
export * as control from "./control/index.ts";
