import type { DiagnosticCode } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import type { Expr } from "./ast.ts";
import type { ExprDiagnostic } from "./diagnostic.ts";
import { arityText } from "./evaluate-expression.ts";
import { FUNCTIONS } from "./functions.ts";

/** What the checker knows of a value. */
export type Shape =
  | { kind: "any" }
  | { kind: "string" }
  | { kind: "number" }
  | { kind: "boolean" }
  | { kind: "null" }
  | { kind: "array"; items: Shape }
  | { kind: "object"; fields: Record<string, Shape>; open?: boolean; unknownCode?: DiagnosticCode; what?: string };

export type Scope = Record<string, Shape>;

const ANY: Shape = { kind: "any" };

/** Static checks: unknown names, phases, params, outputs, functions, arity and obvious type errors. */
export function checkExpression(expr: Expr, scope: Scope): ExprDiagnostic[] {
  const out: ExprDiagnostic[] = [];
  shapeOf(expr, scope, out);
  return out;
}

function shapeOf(e: Expr, scope: Scope, out: ExprDiagnostic[]): Shape {
  switch (e.kind) {
    case "literal":
      return e.value === null ? { kind: "null" } : typeof e.value === "string" ? { kind: "string" } : typeof e.value === "number" ? { kind: "number" } : typeof e.value === "boolean" ? { kind: "boolean" } : ANY;
    case "ident": {
      const s = scope[e.name];
      if (!s) {
        out.push({ code: "EXPR_UNKNOWN_NAME", message: `unknown name "${e.name}"`, start: e.start, end: e.end, hint: didYouMean(e.name, Object.keys(scope)) ?? (FUNCTIONS[e.name] ? `"${e.name}" is a function: call it as ${e.name}(…)` : undefined) });
        return ANY;
      }
      return s;
    }
    case "member":
      return memberShape(shapeOf(e.object, scope, out), e.property, e.propStart, e.end, out);
    case "index": {
      const obj = shapeOf(e.object, scope, out);
      const idx = shapeOf(e.index, scope, out);
      if (e.index.kind === "literal" && typeof e.index.value === "string") return memberShape(obj, e.index.value, e.index.start, e.index.end, out);
      if (obj.kind === "array") return idx.kind === "string" ? ANY : obj.items;
      return ANY;
    }
    case "array":
      e.items.forEach((i) => shapeOf(i, scope, out));
      return { kind: "array", items: ANY };
    case "unary": {
      const s = shapeOf(e.operand, scope, out);
      if (e.op === "-" && isKnown(s) && s.kind !== "number") out.push({ code: "EXPR_TYPE", message: `cannot negate a ${s.kind}`, start: e.start, end: e.end });
      return e.op === "!" ? { kind: "boolean" } : { kind: "number" };
    }
    case "conditional":
      shapeOf(e.test, scope, out);
      shapeOf(e.then, scope, out);
      shapeOf(e.else, scope, out);
      return ANY;
    case "call": {
      const def = FUNCTIONS[e.callee];
      const args = e.args.map((a) => shapeOf(a, scope, out));
      if (!def) {
        out.push({ code: "EXPR_UNKNOWN_FUNCTION", message: `unknown function "${e.callee}"`, start: e.start, end: e.calleeEnd, hint: didYouMean(e.callee, Object.keys(FUNCTIONS)) ?? (e.callee === "length" ? 'did you mean "len"?' : undefined) });
        return ANY;
      }
      if (e.args.length < def.arity[0] || e.args.length > def.arity[1]) {
        out.push({ code: "EXPR_ARITY", message: `${e.callee}() takes ${arityText(def.arity)}, got ${e.args.length}`, start: e.start, end: e.end });
      } else if (def.firstArg && args[0] && isKnown(args[0]) && !def.firstArg.includes(args[0].kind as never)) {
        out.push({ code: "EXPR_TYPE", message: `${e.callee}() cannot take a ${args[0].kind}`, start: e.args[0]!.start, end: e.args[0]!.end });
      }
      return ANY;
    }
    case "binary": {
      const l = shapeOf(e.left, scope, out);
      const r = shapeOf(e.right, scope, out);
      if (["<", "<=", ">", ">="].includes(e.op) && isKnown(l) && isKnown(r)) {
        const ok = (l.kind === "number" && r.kind === "number") || (l.kind === "string" && r.kind === "string");
        if (!ok) out.push({ code: "EXPR_TYPE", message: `cannot compare a ${l.kind} with a ${r.kind}`, start: e.start, end: e.end, hint: l.kind === "string" || r.kind === "string" ? "convert with int(…) or number(…)" : undefined });
      }
      if (["-", "*", "/", "%"].includes(e.op) && isKnown(l) && isKnown(r) && (l.kind !== "number" || r.kind !== "number")) {
        out.push({ code: "EXPR_TYPE", message: `"${e.op}" needs numbers, not a ${l.kind !== "number" ? l.kind : r.kind}`, start: e.start, end: e.end });
      }
      if (e.op === "-" && e.left.end === e.opStart && e.right.start === e.opStart + 1 && out.length > 0 && out[out.length - 1]!.code.startsWith("EXPR_UNKNOWN")) {
        const last = out[out.length - 1]!;
        last.hint ??= `names with "-" are reached by index: phases["a-b"], not phases.a-b`;
      }
      if (["==", "!=", "<", "<=", ">", ">=", "in", "&&", "||"].includes(e.op)) return { kind: "boolean" };
      if (e.op === "+") return l.kind === "string" || r.kind === "string" ? { kind: "string" } : l.kind === "number" && r.kind === "number" ? { kind: "number" } : ANY;
      return { kind: "number" };
    }
  }
}

function isKnown(s: Shape): boolean {
  return s.kind !== "any" && s.kind !== "null";
}

function memberShape(obj: Shape, name: string, start: number, end: number, out: ExprDiagnostic[]): Shape {
  if (obj.kind === "object") {
    const f = obj.fields[name];
    if (f) return f;
    if (obj.open) return ANY;
    const what = obj.what ?? "member";
    const known = Object.keys(obj.fields);
    out.push({
      code: obj.unknownCode ?? "EXPR_UNKNOWN_NAME",
      message: `unknown ${what} "${name}"`,
      start,
      end,
      hint: didYouMean(name, known) ?? (known.length ? `known: ${known.slice(0, 12).join(", ")}` : what === "output" ? "declare it under the phase's output" : what === "param" ? "declare it under params" : undefined),
    });
    return ANY;
  }
  if (obj.kind === "array" && name === "length") return { kind: "number" };
  if (isKnown(obj)) {
    out.push({ code: "EXPR_TYPE", message: `a ${obj.kind} has no member "${name}"`, start, end });
  }
  return ANY;
}

/** Member chains from a root name with static keys: params.file → ["params", "file"]. */
export function collectReferences(expr: Expr): { path: string[]; start: number; end: number }[] {
  const out: { path: string[]; start: number; end: number }[] = [];
  const chain = (e: Expr): string[] | undefined => {
    if (e.kind === "ident") return [e.name];
    if (e.kind === "member") {
      const p = chain(e.object);
      return p ? [...p, e.property] : undefined;
    }
    if (e.kind === "index" && e.index.kind === "literal" && typeof e.index.value === "string") {
      const p = chain(e.object);
      return p ? [...p, e.index.value] : undefined;
    }
    return undefined;
  };
  const walk = (e: Expr, parentIsChain: boolean) => {
    const isChain = e.kind === "ident" || e.kind === "member" || (e.kind === "index" && e.index.kind === "literal");
    if (isChain && !parentIsChain) {
      const p = chain(e);
      if (p) out.push({ path: p, start: e.start, end: e.end });
    }
    switch (e.kind) {
      case "member":
        walk(e.object, true);
        break;
      case "index":
        walk(e.object, e.index.kind === "literal");
        walk(e.index, false);
        break;
      case "call":
        e.args.forEach((a) => walk(a, false));
        break;
      case "array":
        e.items.forEach((a) => walk(a, false));
        break;
      case "unary":
        walk(e.operand, false);
        break;
      case "binary":
        walk(e.left, false);
        walk(e.right, false);
        break;
      case "conditional":
        walk(e.test, false);
        walk(e.then, false);
        walk(e.else, false);
        break;
      default:
        break;
    }
  };
  walk(expr, false);
  return out;
}
