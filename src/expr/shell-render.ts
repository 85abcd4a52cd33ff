/**
 * Rendering a shell command from a template whose contexts shellContexts has
 * found: each value in an environment variable of its own, the command
 * referring to it (see shell-context.ts for where each reference may stand).
 */
import type { Expr } from "./ast.ts";
import type { JsonValue } from "./json-value.ts";
import { shellContexts, type ShellContexts } from "./shell-context.ts";
import { renderTemplate, type RenderResult, type Template } from "./template.ts";

const cache = new WeakMap<Template, ShellContexts>();

export type ShellRender = { ok: true; value: string; env: Record<string, string> } | { ok: false; error: string; start: number; end: number };

/** The variable a template's value travels in: `PHASELOOP_T1_answer` for `{{ phases.approve.answer }}`. */
export function templateVariable(expr: Expr, n: number): string {
  const last = expr.kind === "member" ? expr.property : expr.kind === "ident" ? expr.name : "";
  const slug = last.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 32);
  return `PHASELOOP_T${n}${slug ? `_${slug}` : ""}`;
}

/**
 * Render a shell command: each value in an environment variable of its own,
 * the command referring to it. `first`: the number of the first variable
 * (several scripts rendered for one process). A template no reference can
 * keep data, or a value holding a NUL byte, is an error, never a command.
 */
export function renderShell(template: Template, context: Record<string, JsonValue>, first = 1): ShellRender {
  let found = cache.get(template);
  if (!found) cache.set(template, (found = shellContexts(template)));
  if (!found.ok) {
    const d = found.diagnostics[0]!;
    return { ok: false, error: d.message, start: d.start, end: d.end };
  }
  const contexts = found.contexts;
  const exprs = template.parts.filter((p) => p.kind === "expr");
  const env: Record<string, string> = {};
  const r: RenderResult = renderTemplate(template, context, {
    quote: (text, i) => {
      const ctx = contexts[i] ?? "bare";
      if (ctx === "verbatim") return text;
      const name = templateVariable(exprs[i]!.expr, first + i);
      env[name] = text;
      return ctx === "double" ? `\${${name}}` : ctx === "single" ? `'"\${${name}}"'` : `"\${${name}}"`;
    },
  });
  return r.ok ? { ok: true, value: r.value, env } : r;
}

/** POSIX sh single quoting: safe for any text. */
export function shellQuote(text: string): string {
  if (text !== "" && /^[A-Za-z0-9_\-.,/:=@%+]+$/.test(text)) return text;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
