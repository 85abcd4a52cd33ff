import type { ExprDiagnostic } from "./diagnostic.ts";

export type TokenKind = "number" | "string" | "ident" | "op" | "eof";
export interface Token {
  kind: TokenKind;
  /** The operator or identifier text; the decoded value for strings. */
  text: string;
  value?: number | string;
  start: number;
  end: number;
}

const OPERATORS = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",", ".", "?", ":"];

export function tokenize(source: string): { tokens: Token[]; diagnostics: ExprDiagnostic[] } {
  const tokens: Token[] = [];
  const diagnostics: ExprDiagnostic[] = [];
  let i = 0;
  while (i < source.length) {
    const ch = source[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    if (/[0-9]/.test(ch) || (ch === "." && /[0-9]/.test(source[i + 1] ?? ""))) {
      const m = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(source.slice(i))!;
      i += m[0].length;
      if (/[A-Za-z_]/.test(source[i] ?? "")) {
        const bad = /^[A-Za-z_0-9]+/.exec(source.slice(i))![0];
        diagnostics.push({ code: "EXPR_SYNTAX", message: `invalid number "${m[0]}${bad}"`, start, end: i + bad.length });
        i += bad.length;
      }
      tokens.push({ kind: "number", text: m[0], value: Number(m[0]), start, end: i });
      continue;
    }
    if (/[A-Za-z_]/.test(ch)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(source.slice(i))!;
      i += m[0].length;
      tokens.push({ kind: "ident", text: m[0], start, end: i });
      continue;
    }
    if (ch === '"' || ch === "'") {
      let value = "";
      i++;
      let closed = false;
      while (i < source.length) {
        const c = source[i]!;
        if (c === ch) {
          closed = true;
          i++;
          break;
        }
        if (c === "\\") {
          const n = source[i + 1];
          const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0", "/": "/" };
          if (n !== undefined && map[n] !== undefined) {
            value += map[n];
            i += 2;
            continue;
          }
          if (n === "u" && /^[0-9a-fA-F]{4}$/.test(source.slice(i + 2, i + 6))) {
            value += String.fromCharCode(parseInt(source.slice(i + 2, i + 6), 16));
            i += 6;
            continue;
          }
          diagnostics.push({ code: "EXPR_SYNTAX", message: `unknown escape "\\${n ?? ""}" in a string`, start: i, end: Math.min(source.length, i + 2) });
          i += n === undefined ? 1 : 2;
          continue;
        }
        value += c;
        i++;
      }
      if (!closed) diagnostics.push({ code: "EXPR_SYNTAX", message: "unterminated string", start, end: source.length, hint: `close it with ${ch}` });
      tokens.push({ kind: "string", text: source.slice(start, i), value, start, end: i });
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, i));
    if (op) {
      i += op.length;
      tokens.push({ kind: "op", text: op, start, end: i });
      continue;
    }
    const cp = source.codePointAt(i)!;
    const len = cp > 0xffff ? 2 : 1;
    const shown = ch === "=" ? "=" : String.fromCodePoint(cp);
    diagnostics.push({
      code: "EXPR_SYNTAX",
      message: `unexpected character "${shown}"`,
      start: i,
      end: i + len,
      hint: ch === "=" ? 'did you mean "=="?' : ch === "&" ? 'did you mean "&&"?' : ch === "|" ? 'did you mean "||"?' : undefined,
    });
    i += len;
  }
  tokens.push({ kind: "eof", text: "", start: source.length, end: source.length });
  return { tokens, diagnostics };
}
