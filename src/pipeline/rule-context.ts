/**
 * What every semantic rule of validation shares: the context it reads and
 * the helpers that locate a diagnostic and walk phases and rules.
 */
import type { Document } from "yaml";
import type { Diagnostic, DiagnosticCode } from "../diagnostics/diagnostic.ts";
import { spanOfPointer } from "./parse-pipeline-text.ts";
import { dirnameOf, joinPath } from "./paths.ts";
import type { PhaseSpec, PipelineDoc, TransitionRule } from "./spec.ts";

/** What a semantic rule sees. */
export interface RuleContext {
  doc: PipelineDoc;
  document: Document.Parsed | undefined;
  text: string;
  file: string;
  /** Prompt files by resolved path: text, or undefined when missing. */
  promptFiles: Record<string, string | undefined>;
  /** Param names referenced anywhere (filled by the expression rules). */
  usedParams: Set<string>;
}

export type Rule = (ctx: RuleContext) => Diagnostic[];

/** The resolved path of a phase's prompt file (relative to the pipeline file). */
export function promptFilePath(file: string, prompt: string): string {
  return joinPath(dirnameOf(file), prompt.trim());
}

/** A located diagnostic at a JSON pointer of the document. */
export function diag(ctx: RuleContext, code: DiagnosticCode, pointer: string, message: string, extra: Partial<Diagnostic> & { mode?: "key" | "value" } = {}): Diagnostic {
  const { mode, ...rest } = extra;
  const span = spanOfPointer(ctx.document, ctx.text, pointer, mode ?? "value");
  return { code, severity: "error", message, file: ctx.file, pointer, ...span, ...rest };
}

/** A key escaped for a JSON pointer. */
export const esc = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/** The phases that are objects (a schema-invalid document may hold others). */
export function phaseEntries(doc: PipelineDoc): [string, PhaseSpec][] {
  return Object.entries(doc.phases ?? {}).filter(([, p]) => p && typeof p === "object");
}

/** A phase's transition rules that are objects. */
export function rulesOf(phase: PhaseSpec): TransitionRule[] {
  return Array.isArray(phase.next) ? phase.next.filter((r) => r && typeof r === "object") : [];
}
