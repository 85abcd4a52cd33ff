/**
 * What a control operation refuses, as one error class over plain records
 * (like ajv's ValidationError): a stable code, a sentence, an optional hint,
 * and the pipeline's diagnostics when the pipeline is what is wrong. The CLI,
 * the MCP server and the page each turn it into their own form.
 */
import type { JsonDiagnostic } from "../diagnostics/format-diagnostic.ts";

export type ControlErrorCode =
  /** The workdir does not exist or is not a directory. */
  | "WORKDIR_INVALID"
  /** A path that leads outside the workdir (`..`, an absolute path, a symbolic link). */
  | "PATH_OUTSIDE_WORKDIR"
  /** A path that does not exist, or is not a file. */
  | "PATH_NOT_FOUND"
  /** An argument of the wrong shape (a param, an answer, a limit). */
  | "BAD_ARGUMENT"
  /** The pipeline has errors: `diagnostics` lists them. */
  | "PIPELINE_INVALID"
  /** No such run, or a prefix that names several. */
  | "UNKNOWN_RUN"
  /** The run is not running (stop), or is running (resume, answer). */
  | "RUN_NOT_RUNNING"
  | "RUN_RUNNING"
  /** The run does not wait for an answer. */
  | "NOT_AWAITING_ANSWER"
  /** The run had finished: nothing to resume. */
  | "RUN_FINISHED"
  /** The workdir is in use by another run. */
  | "WORKDIR_BUSY"
  /** The started process refused or failed before the run began: `output` has what it printed. */
  | "START_FAILED"
  /** A cursor that this log did not hand out. */
  | "BAD_CURSOR"
  /** A file of the run cannot be read (its event log is a directory, say). */
  | "RUN_STATE_INVALID";

export class ControlError extends Error {
  readonly code: ControlErrorCode;
  readonly hint?: string;
  readonly diagnostics?: JsonDiagnostic[];
  /** What a started process printed before it stopped (START_FAILED). */
  readonly output?: string;

  constructor(code: ControlErrorCode, message: string, extra: { hint?: string; diagnostics?: JsonDiagnostic[]; output?: string } = {}) {
    super(message);
    this.name = "ControlError";
    this.code = code;
    if (extra.hint !== undefined) this.hint = extra.hint;
    if (extra.diagnostics !== undefined) this.diagnostics = extra.diagnostics;
    if (extra.output !== undefined) this.output = extra.output;
  }

  /** A plain record, for JSON answers. */
  toJSON(): { code: ControlErrorCode; message: string; hint?: string; diagnostics?: JsonDiagnostic[]; output?: string } {
    return { code: this.code, message: this.message, ...(this.hint !== undefined ? { hint: this.hint } : {}), ...(this.diagnostics ? { diagnostics: this.diagnostics } : {}), ...(this.output !== undefined ? { output: this.output } : {}) };
  }
}
