import type { Diagnostic } from "./diagnostic.ts";
import { LineCounter } from "./line-counter.ts";

/** Colour functions, injected by the CLI (kleur) so this module stays pure. */
export interface Colorizer {
  red(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  bold(s: string): string;
  dim(s: string): string;
}

const plain: Colorizer = { red: (s) => s, yellow: (s) => s, cyan: (s) => s, bold: (s) => s, dim: (s) => s };

export interface FormatOptions {
  color?: Colorizer;
  /** Show the source line with a caret under the span. Default true. */
  frame?: boolean;
}

/** Texts of the files diagnostics point into, by path, and a LineCounter cache. */
export class SourceMap {
  private readonly counters = new Map<string, LineCounter>();
  private readonly texts: Record<string, string>;
  constructor(texts: Record<string, string>) {
    this.texts = texts;
  }
  text(file: string | undefined): string | undefined {
    return file === undefined ? undefined : this.texts[file];
  }
  counter(file: string | undefined): LineCounter | undefined {
    const text = this.text(file);
    if (text === undefined || file === undefined) return undefined;
    let c = this.counters.get(file);
    if (!c) this.counters.set(file, (c = new LineCounter(text)));
    return c;
  }
}

/**
 * `path:line:col: error CODE message`, then the source line with a caret frame
 * under the span, then `hint: …`.
 */
export function formatDiagnostic(d: Diagnostic, sources: SourceMap, options: FormatOptions = {}): string {
  const c = options.color ?? plain;
  const counter = sources.counter(d.file);
  const pos = counter?.position(d.start) ?? { line: 1, col: 1 };
  const sev = d.severity === "error" ? c.red(c.bold("error")) : c.yellow(c.bold("warning"));
  const lines = [`${c.bold(`${d.file ?? "<input>"}:${pos.line}:${pos.col}`)}: ${sev} ${c.dim(d.code)} ${d.message}`];
  const src = counter && options.frame !== false ? counter.lineText(pos.line) : "";
  // a blank line frames nothing (a file that could not be read has no text at all)
  if (counter && src.trim() !== "") {
    const endPos = counter.position(Math.max(d.start, d.end));
    const width = endPos.line === pos.line ? Math.max(1, endPos.col - pos.col) : Math.max(1, src.length - pos.col + 1);
    const gutter = String(pos.line);
    const pad = " ".repeat(gutter.length);
    const visible = src.replace(/\t/g, " ");
    lines.push(`${c.dim(`${gutter} |`)} ${visible}`);
    lines.push(`${c.dim(`${pad} |`)} ${" ".repeat(pos.col - 1)}${c.red("^" + "~".repeat(Math.max(0, width - 1)))}`);
  }
  if (d.hint) lines.push(`${c.cyan("hint")}: ${d.hint}`);
  for (const r of d.related ?? []) {
    const rc = sources.counter(r.file ?? d.file)?.position(r.start);
    lines.push(`${c.dim("note")}: ${r.message}${rc ? ` (${r.file ?? d.file}:${rc.line}:${rc.col})` : ""}`);
  }
  return lines.join("\n");
}

export interface JsonDiagnostic {
  file: string | null;
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
  severity: Diagnostic["severity"];
  code: Diagnostic["code"];
  message: string;
  hint: string | null;
  pointer: string | null;
  /** Notes at other places: the files that led to this one (extends, include), a first definition. */
  related?: { file: string | null; line: number; column: number; message: string }[];
}

/** Diagnostics as data, for `--json`. */
export function toJsonDiagnostic(d: Diagnostic, sources: SourceMap): JsonDiagnostic {
  const counter = sources.counter(d.file);
  const s = counter?.position(d.start) ?? { line: 1, col: 1 };
  const e = counter?.position(d.end) ?? s;
  return {
    file: d.file ?? null,
    line: s.line,
    column: s.col,
    endLine: e.line,
    endColumn: e.col,
    severity: d.severity,
    code: d.code,
    message: d.message,
    hint: d.hint ?? null,
    pointer: d.pointer ?? null,
    ...(d.related?.length
      ? {
          related: d.related.map((r) => {
            const p = sources.counter(r.file ?? d.file)?.position(r.start) ?? { line: 1, col: 1 };
            return { file: r.file ?? d.file ?? null, line: p.line, column: p.col, message: r.message };
          }),
        }
      : {}),
  };
}

/** Sort by file, then offset; errors before warnings at the same place. */
export function sortDiagnostics(list: readonly Diagnostic[]): Diagnostic[] {
  return [...list].sort(
    (a, b) =>
      (a.file ?? "").localeCompare(b.file ?? "") ||
      a.start - b.start ||
      (a.severity === b.severity ? 0 : a.severity === "error" ? -1 : 1) ||
      a.code.localeCompare(b.code),
  );
}
