/**
 * Where each `{{ }}` of a shell command stands, as `sh` will read it: bare,
 * inside double quotes, or inside single quotes. Each of those has a quoting
 * that hands the command exactly the value; anywhere else (backticks, `${…}`,
 * arithmetic, `$'…'`, a comment, a here-document) phaseloop cannot quote
 * safely, and the template is refused before anything runs.
 */
import type { ExprDiagnostic } from "./diagnostic.ts";
import type { JsonValue } from "./json-value.ts";
import { renderTemplate, type RenderResult, type Template } from "./template.ts";

export type ShellContext = "bare" | "double" | "single";

type Frame =
  | { kind: "bare"; parens: number } // top level or inside $( … )
  | { kind: "double" }
  | { kind: "single" }
  | { kind: "backtick" }
  | { kind: "param"; braces: number }
  | { kind: "arith"; parens: number }
  | { kind: "ansi" }
  | { kind: "comment" }
  | { kind: "heredoc"; delimiters: string[]; line: string; strip: boolean };

const UNSAFE: Record<string, string> = {
  backtick: "inside backticks",
  param: 'inside "${…}"',
  arith: 'inside "$((…))"',
  ansi: "inside $'…'",
  comment: "inside a shell comment",
  heredoc: "inside a here-document",
};

export type ShellContexts = { ok: true; contexts: ShellContext[] } | { ok: false; diagnostics: ExprDiagnostic[] };

/** The shell context of every expression part of `template`, in order. */
export function shellContexts(template: Template): ShellContexts {
  const stack: Frame[] = [{ kind: "bare", parens: 0 }];
  const contexts: ShellContext[] = [];
  const diagnostics: ExprDiagnostic[] = [];
  let wordStart = true;
  let pendingHeredocs: { word: string; strip: boolean }[] = [];
  const top = () => stack[stack.length - 1]!;

  for (const part of template.parts) {
    if (part.kind === "expr") {
      const f = top();
      if (f.kind === "bare") contexts.push("bare");
      else if (f.kind === "double") contexts.push("double");
      else if (f.kind === "single") contexts.push("single");
      else {
        contexts.push("bare");
        diagnostics.push({
          code: "SHELL_TEMPLATE_CONTEXT",
          message: `a template ${UNSAFE[f.kind]} cannot be quoted safely`,
          start: part.start,
          end: part.end,
          hint: "put it outside, bare or in plain quotes (echo \"v={{ x }}\"), or write the command as an argv list",
        });
      }
      if (f.kind === "heredoc") f.line += "\0"; // a value never ends a here-document
      wordStart = false;
      continue;
    }
    const s = part.text;
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      const next = s[i + 1];
      const f = top();
      switch (f.kind) {
        case "single":
          if (c === "'") stack.pop();
          break;
        case "ansi":
          if (c === "\\") i++;
          else if (c === "'") stack.pop();
          break;
        case "comment":
          if (c === "\n") {
            stack.pop();
            i--; // the newline ends the command too: let the frame below see it
          }
          break;
        case "heredoc":
          if (c === "\n") {
            const line = f.strip ? f.line.replace(/^\t+/, "") : f.line;
            if (line === f.delimiters[0]) f.delimiters.shift();
            f.line = "";
            if (f.delimiters.length === 0) stack.pop();
          } else f.line += c;
          break;
        case "backtick":
          if (c === "\\") i++;
          else if (c === "`") stack.pop();
          break;
        case "double":
          if (c === "\\") i++;
          else if (c === '"') stack.pop();
          else if (c === "`") stack.push({ kind: "backtick" });
          else if (c === "$") i = dollar(s, i, stack);
          break;
        case "param":
          if (c === "\\") i++;
          else if (c === "{") f.braces++;
          else if (c === "}" && --f.braces === 0) stack.pop();
          break;
        case "arith":
          if (c === "(") f.parens++;
          else if (c === ")" && --f.parens === 0) {
            stack.pop();
            if (s[i + 1] === ")") i++;
          }
          break;
        case "bare": {
          const wasStart = wordStart;
          wordStart = /[\s;&|()<>]/.test(c);
          if (c === "\\") {
            i++;
            wordStart = false;
          } else if (c === "'") stack.push({ kind: "single" });
          else if (c === '"') stack.push({ kind: "double" });
          else if (c === "`") stack.push({ kind: "backtick" });
          else if (c === "$") i = dollar(s, i, stack);
          else if (c === "#" && wasStart) stack.push({ kind: "comment" });
          else if (c === "(") f.parens++;
          else if (c === ")" && f.parens > 0) f.parens--;
          else if (c === ")" && stack.length > 1) stack.pop();
          else if (c === "<" && next === "<" && s[i + 2] !== "<") {
            const h = heredocWord(s, i + 2);
            if (h) {
              pendingHeredocs.push({ word: h.word, strip: h.strip });
              i = h.end - 1;
            }
          } else if (c === "\n" && pendingHeredocs.length > 0) {
            stack.push({ kind: "heredoc", delimiters: pendingHeredocs.map((p) => p.word), line: "", strip: pendingHeredocs.some((p) => p.strip) });
            pendingHeredocs = [];
          }
          break;
        }
      }
    }
  }
  return diagnostics.length ? { ok: false, diagnostics } : { ok: true, contexts };
}

/** After a `$` at `i`: push what it opens; returns the index of the last character consumed. */
function dollar(s: string, i: number, stack: Frame[]): number {
  const n = s[i + 1];
  if (n === "(" && s[i + 2] === "(") {
    stack.push({ kind: "arith", parens: 1 });
    return i + 2;
  }
  if (n === "(") {
    stack.push({ kind: "bare", parens: 0 });
    return i + 1;
  }
  if (n === "{") {
    stack.push({ kind: "param", braces: 1 });
    return i + 1;
  }
  if (n === "'" && stack[stack.length - 1]!.kind === "bare") {
    stack.push({ kind: "ansi" });
    return i + 1;
  }
  return i;
}

/** The delimiter word after `<<` (or `<<-`), unquoted. */
function heredocWord(s: string, from: number): { word: string; strip: boolean; end: number } | undefined {
  let i = from;
  const strip = s[i] === "-";
  if (strip) i++;
  while (s[i] === " " || s[i] === "\t") i++;
  let word = "";
  while (i < s.length && !/[\s;&|()<>]/.test(s[i]!)) {
    const c = s[i]!;
    if (c === "'" || c === '"') {
      const close = s.indexOf(c, i + 1);
      if (close < 0) break;
      word += s.slice(i + 1, close);
      i = close + 1;
    } else if (c === "\\") {
      word += s[i + 1] ?? "";
      i += 2;
    } else {
      word += c;
      i++;
    }
  }
  return word ? { word, strip, end: i } : undefined;
}

const cache = new WeakMap<Template, ShellContexts>();

/**
 * Render a shell command: each value quoted for the context it stands in. A
 * template no quoting can make safe, or a value holding a NUL byte (which no
 * command line can carry), is an error, never a command.
 */
export function renderShell(template: Template, context: Record<string, JsonValue>): RenderResult {
  let found = cache.get(template);
  if (!found) cache.set(template, (found = shellContexts(template)));
  if (!found.ok) {
    const d = found.diagnostics[0]!;
    return { ok: false, error: d.message, start: d.start, end: d.end };
  }
  const contexts = found.contexts;
  return renderTemplate(template, context, { quote: (text, i) => quoteFor(contexts[i] ?? "bare", text) });
}

/** A value as it must be written in `context` for the shell to hand on exactly its text. */
export function quoteFor(context: ShellContext, text: string): string {
  switch (context) {
    case "single":
      return text.replace(/'/g, `'\\''`);
    case "double":
      return text.replace(/[\\$`"]/g, "\\$&");
    case "bare":
      return shellQuote(text);
  }
}

/** POSIX sh single quoting: safe for any text. */
export function shellQuote(text: string): string {
  if (text !== "" && /^[A-Za-z0-9_\-.,/:=@%+]+$/.test(text)) return text;
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
