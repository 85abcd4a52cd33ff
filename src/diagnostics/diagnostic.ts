/**
 * A diagnostic is a plain record: a stable code, a severity, a message, and a
 * span as character offsets into the file's text. Line and column are worked
 * out only when a diagnostic is printed (see format-diagnostic.ts).
 */

export type Severity = "error" | "warning";

export interface Span {
  /** Offset of the first character. */
  start: number;
  /** Offset just past the last character (end >= start). */
  end: number;
}

export interface RelatedInfo extends Span {
  file?: string;
  message: string;
}

export interface Diagnostic extends Span {
  code: DiagnosticCode;
  severity: Severity;
  /** Sentence case, no final period, values quoted. */
  message: string;
  /** The file the span points into. */
  file?: string;
  /** JSON pointer of the offending value in the document, when there is one. */
  pointer?: string;
  /** How to fix it: "did you mean \"review\"?" */
  hint?: string;
  related?: RelatedInfo[];
}

/**
 * Every code phaseloop can report. docs/diagnostics.md has a line for each;
 * a test checks that the two lists agree.
 */
export const DIAGNOSTIC_CODES = [
  // reading the file
  "FILE_NOT_FOUND",
  "YAML_SYNTAX",
  "YAML_DUPLICATE_KEY",
  // extends and include
  "EXTENDS_NOT_FOUND",
  "EXTENDS_CYCLE",
  "INCLUDE_KEY",
  "INCLUDE_CONFLICT",
  "OVERRIDE_UNKNOWN",
  // the schema
  "SCHEMA_VERSION",
  "SCHEMA_REQUIRED",
  "SCHEMA_UNKNOWN_KEY",
  "SCHEMA_TYPE",
  "SCHEMA_ENUM",
  "SCHEMA_PATTERN",
  "SCHEMA_RANGE",
  "SCHEMA_INVALID",
  // expressions and templates
  "EXPR_SYNTAX",
  "EXPR_UNKNOWN_NAME",
  "EXPR_UNKNOWN_PHASE",
  "EXPR_UNKNOWN_PARAM",
  "EXPR_UNKNOWN_OUTPUT",
  "EXPR_UNKNOWN_FUNCTION",
  "EXPR_ARITY",
  "EXPR_TYPE",
  "TEMPLATE_SYNTAX",
  "SHELL_TEMPLATE_CONTEXT",
  "FILE_OUTSIDE_PROMPT",
  "FILE_UNREADABLE",
  // rules the schema cannot express
  "UNKNOWN_PHASE",
  "UNKNOWN_AGENT",
  "UNKNOWN_TOOLS",
  "UNKNOWN_MCP_SERVER",
  "MCP_UNSUPPORTED",
  "UNREACHABLE_PHASE",
  "NO_STOP_PATH",
  "UNBOUNDED_CYCLE",
  "GROUP_MEMBER",
  "GROUP_WRITE_OVERLAP",
  "SUB_PIPELINE_NOT_FOUND",
  "SUB_PIPELINE_CYCLE",
  "SUB_PIPELINE_PARAM",
  "SUB_PIPELINE_SANDBOX",
  "UNDECLARED_PARAM",
  "UNUSED_PARAM",
  "PROMPT_NOT_FOUND",
  "INVALID_DURATION",
  "INVALID_REGEX",
  "INVALID_GLOB",
  "PATH_OUTSIDE_WORKDIR",
  "INVALID_OUTPUT",
  "INVALID_PARAM_DEFAULT",
  "DEAD_RULE",
  "TASK_CYCLE",
  "TASK_SOURCE",
  "LANES_NEED_GIT",
  "EMPTY_COMMAND",
  "MODEL_TIER",
  "SESSION_UNSUPPORTED",
  "SESSION_MISMATCH",
  "OUTPUT_FILE_UNWRITABLE",
  // running
  "AGENT_NOT_FOUND",
  "MCP_COMMAND_NOT_FOUND",
  "PARAM_INVALID",
  "RUN_STATE_INVALID",
  "LOCK_INVALID",
  "SANDBOX_UNAVAILABLE",
  "INTERNAL",
] as const;

export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[number];

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}
