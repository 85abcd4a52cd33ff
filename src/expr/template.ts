import type { JsonValue } from "./json-value.ts";
import type { Expr } from "./ast.ts";
import { checkExpression, collectReferences, type Scope } from "./check-expression.ts";
import type { ExprDiagnostic } from "./diagnostic.ts";
import { evaluateExpression } from "./evaluate-expression.ts";
import { toText, type EvalEnv } from "./functions.ts";
import { parseExpression } from "./parse-expression.ts";

export interface Template {
  parts: ({ kind: "text"; text: string } | { kind: "expr"; expr: Expr; start: number; end: number })[];
}

/** Text with `{{ expr }}` parts; `\{{` is a literal "{{". Offsets are the template's. */
export function parseTemplate(source: string): { template: Template | undefined; diagnostics: ExprDiagnostic[] } {
  const parts: Template["parts"] = [];
  const diagnostics: ExprDiagnostic[] = [];
  let text = "";
  let i = 0;
  while (i < source.length) {
    if (source.startsWith("\\{{", i)) {
      text += "{{";
      i += 3;
      continue;
    }
    if (source.startsWith("{{", i)) {
      const close = findClose(source, i + 2);
      if (close < 0) {
        diagnostics.push({ code: "TEMPLATE_SYNTAX", message: 'unclosed "{{"', start: i, end: Math.min(source.length, i + 2), hint: 'close it with "}}", or write "\\{{" for a literal "{{"' });
        break;
      }
      if (text) parts.push({ kind: "text", text });
      text = "";
      const inner = source.slice(i + 2, close);
      const offset = i + 2;
      const parsed = parseExpression(inner);
      for (const d of parsed.diagnostics) diagnostics.push({ ...d, start: d.start + offset, end: d.end + offset });
      if (parsed.expr) parts.push({ kind: "expr", expr: shift(parsed.expr, offset), start: i, end: close + 2 });
      i = close + 2;
      continue;
    }
    text += source[i];
    i++;
  }
  if (text) parts.push({ kind: "text", text });
  return { template: diagnostics.length ? undefined : { parts }, diagnostics };
}

/** The "}}" that closes a part, skipping strings inside the expression. */
function findClose(source: string, from: number): number {
  let quote: string | undefined;
  for (let i = from; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if (c === "}" && source[i + 1] === "}") return i;
    else if (c === "\n" && source.startsWith("{{", i + 1)) return -1;
  }
  return -1;
}

/** Move every offset of an AST by `by` (expressions inside templates). */
function shift(e: Expr, by: number): Expr {
  const s = (x: Expr) => shift(x, by);
  const base = { start: e.start + by, end: e.end + by };
  switch (e.kind) {
    case "literal":
    case "ident":
      return { ...e, ...base };
    case "member":
      return { ...e, ...base, object: s(e.object), propStart: e.propStart + by };
    case "index":
      return { ...e, ...base, object: s(e.object), index: s(e.index) };
    case "call":
      return { ...e, ...base, args: e.args.map(s), calleeEnd: e.calleeEnd + by };
    case "array":
      return { ...e, ...base, items: e.items.map(s) };
    case "unary":
      return { ...e, ...base, operand: s(e.operand) };
    case "binary":
      return { ...e, ...base, left: s(e.left), right: s(e.right), opStart: e.opStart + by };
    case "conditional":
      return { ...e, ...base, test: s(e.test), then: s(e.then), else: s(e.else) };
  }
}

export function checkTemplate(template: Template, scope: Scope): ExprDiagnostic[] {
  return template.parts.flatMap((p) => (p.kind === "expr" ? checkExpression(p.expr, scope) : []));
}

export function templateReferences(template: Template): { path: string[]; start: number; end: number }[] {
  return template.parts.flatMap((p) => (p.kind === "expr" ? collectReferences(p.expr) : []));
}

/** How a value becomes text: strings as they are, null as "", lists and mappings as JSON. */
export function formatValue(value: JsonValue): string {
  return toText(value);
}

export type RenderResult = { ok: true; value: string } | { ok: false; error: string; start: number; end: number };

/** Render; `quote` is applied to each interpolated value with its index among them (shell quoting for `run` strings). */
export function renderTemplate(template: Template, context: Record<string, JsonValue>, options: { quote?: (text: string, index: number) => string; env?: EvalEnv } = {}): RenderResult {
  let out = "";
  let index = 0;
  for (const p of template.parts) {
    if (p.kind === "text") {
      out += p.text;
      continue;
    }
    const r = evaluateExpression(p.expr, context, options.env);
    if (!r.ok) return r;
    const text = formatValue(r.value);
    out += options.quote ? options.quote(text, index++) : text;
  }
  return { ok: true, value: out };
}

/** Whether a template is only text (no parts to render). */
export function isStatic(template: Template): boolean {
  return template.parts.every((p) => p.kind === "text");
}

