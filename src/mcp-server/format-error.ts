/** A refusal or a failure as a tool result: isError, the words first, then the record (code, message, hint, diagnostics). */
import { ControlError } from "../control/control-error.ts";

export interface ErrorRecord {
  code: string;
  message: string;
  hint?: string;
  diagnostics?: unknown[];
  output?: string;
}

export function errorRecord(error: unknown): ErrorRecord {
  if (error instanceof ControlError) return error.toJSON();
  // a bug: said as such, never a crash of the server
  return { code: "INTERNAL", message: `internal error: ${error instanceof Error ? error.message : String(error)}` };
}

export function formatErrorText(record: ErrorRecord): string {
  const lines = [`error ${record.code}: ${record.message}`];
  if (record.hint) lines.push(`  hint: ${record.hint}`);
  for (const d of (record.diagnostics ?? []) as { file?: string | null; line?: number; column?: number; severity?: string; code?: string; message?: string; hint?: string | null }[]) {
    lines.push(`${d.file ?? "<pipeline>"}:${d.line ?? 1}:${d.column ?? 1}: ${d.severity ?? "error"} ${d.code ?? ""} ${d.message ?? ""}${d.hint ? ` (${d.hint})` : ""}`);
  }
  if (record.output) lines.push("", "what the run's process printed:", record.output.trimEnd());
  return lines.join("\n");
}
