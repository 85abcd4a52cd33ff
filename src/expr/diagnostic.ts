import type { DiagnosticCode } from "../diagnostics/diagnostic.ts";

/** A problem in an expression or template; offsets are relative to its source. */
export interface ExprDiagnostic {
  code: DiagnosticCode;
  message: string;
  start: number;
  end: number;
  hint?: string;
}
