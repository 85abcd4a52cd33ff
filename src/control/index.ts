/**
 * The control layer: one set of operations over a workdir's runs, used by
 * the CLI, the MCP server and the page of `phaseloop ui` alike. Starting,
 * stopping, answering and resuming go through here; so does reading runs
 * back. Errors are `ControlError`s with a stable code.
 */
export { ControlError, type ControlErrorCode } from "./control-error.ts";
export { isInside, resolveInWorkdir, resolveWorkdir } from "./workdir-path.ts";
export { startRun, jsonDiagnostics, type ParamValue, type StartRunOptions, type StartedRun } from "./start-run.ts";
export { stopRun, type StopOptions, type StopResult } from "./stop-run.ts";
export { answerQuestion, resumeRun, type ResumeRunOptions, type ResumedRun } from "./resume-run.ts";
export { findRun, getRun, listRuns, readStartedVia, type RunListEntry, type RunStatus, type StartedVia } from "./read-runs.ts";
export { readRunLog, DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT, type ReadRunLogOptions, type RunLogPage } from "./read-run-log.ts";
export { waitForRun, DEFAULT_WAIT_MS, type WaitEnd, type WaitOptions, type WaitProgress, type WaitResult } from "./wait-for-run.ts";
export { listRecipes, findRecipe, type Recipe } from "./recipes.ts";
export { validatePipeline, type PipelineValidation } from "./validate-pipeline.ts";
export { interruptSignal } from "./interrupt-signal.ts";
export { runInForeground, resumeInForeground, isStartedVia, isRunIdForm } from "./run-in-foreground.ts";
export { outputLogPath, phaseloopCommand } from "./launch.ts";
