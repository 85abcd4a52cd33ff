import type { JsonValue } from "./json-value.ts";
import type { Expr } from "./ast.ts";
import { deepEqual, EvalError, FUNCTIONS, isTruthy, type EvalEnv } from "./functions.ts";

export type EvalResult = { ok: true; value: JsonValue } | { ok: false; error: string; start: number; end: number };

class LocatedError extends Error {
  readonly start: number;
  readonly end: number;
  constructor(message: string, start: number, end: number) {
    super(message);
    this.start = start;
    this.end = end;
  }
}

const typeOf = (v: JsonValue): string => (v === null ? "null" : Array.isArray(v) ? "list" : typeof v === "object" ? "mapping" : typeof v);

/**
 * Evaluate over a JSON context. Total: type errors and bad calls come back as
 * `{ ok: false }`, never as exceptions. Missing members are null.
 */
export function evaluateExpression(expr: Expr, context: Record<string, JsonValue>, env?: EvalEnv): EvalResult {
  const outer = activeEnv;
  activeEnv = env;
  try {
    return { ok: true, value: evaluate(expr, context) };
  } catch (error) {
    if (error instanceof LocatedError) return { ok: false, error: error.message, start: error.start, end: error.end };
    if (error instanceof EvalError) return { ok: false, error: error.message, start: expr.start, end: expr.end };
    if (error instanceof RangeError) return { ok: false, error: "expression is too deep to evaluate", start: expr.start, end: expr.end };
    return { ok: false, error: `cannot evaluate: ${(error as Error).message}`, start: expr.start, end: expr.end };
  } finally {
    activeEnv = outer;
  }
}

/** The environment of the evaluation under way (evaluation is synchronous). */
let activeEnv: EvalEnv | undefined;

function member(obj: JsonValue, key: string): JsonValue {
  if (obj !== null && typeof obj === "object" && !Array.isArray(obj)) return Object.hasOwn(obj, key) ? (obj[key] ?? null) : null;
  if (Array.isArray(obj) && key === "length") return obj.length;
  return null;
}

function evaluate(e: Expr, ctx: Record<string, JsonValue>): JsonValue {
  switch (e.kind) {
    case "literal":
      return e.value;
    case "ident":
      return Object.hasOwn(ctx, e.name) ? (ctx[e.name] ?? null) : null;
    case "member":
      return member(evaluate(e.object, ctx), e.property);
    case "index": {
      const obj = evaluate(e.object, ctx);
      const idx = evaluate(e.index, ctx);
      if (Array.isArray(obj)) {
        if (typeof idx !== "number" || !Number.isInteger(idx)) throw new LocatedError(`a list index must be a whole number, got ${typeOf(idx)}`, e.index.start, e.index.end);
        return obj[idx < 0 ? obj.length + idx : idx] ?? null;
      }
      if (typeof idx === "string") return member(obj, idx);
      if (typeof obj === "string" && typeof idx === "number" && Number.isInteger(idx)) return [...obj].at(idx) ?? null;
      return null;
    }
    case "array":
      return e.items.map((i) => evaluate(i, ctx));
    case "unary": {
      const v = evaluate(e.operand, ctx);
      if (e.op === "!") return !isTruthy(v);
      if (typeof v !== "number") throw new LocatedError(`cannot negate ${typeOf(v)}`, e.start, e.end);
      return -v;
    }
    case "conditional":
      return isTruthy(evaluate(e.test, ctx)) ? evaluate(e.then, ctx) : evaluate(e.else, ctx);
    case "call": {
      const def = FUNCTIONS[e.callee];
      if (!def) throw new LocatedError(`unknown function "${e.callee}"`, e.start, e.calleeEnd);
      if (e.args.length < def.arity[0] || e.args.length > def.arity[1]) {
        throw new LocatedError(`${e.callee}() takes ${arityText(def.arity)}, got ${e.args.length}`, e.start, e.end);
      }
      const args = e.args.map((a) => evaluate(a, ctx));
      try {
        const out = def.withEnv && activeEnv ? def.withEnv(activeEnv, ...args) : def.fn(...args);
        return typeof out === "number" && !Number.isFinite(out) ? null : out;
      } catch (error) {
        if (error instanceof EvalError) throw new LocatedError(error.message, e.start, e.end);
        throw error;
      }
    }
    case "binary":
      return binary(e, ctx);
  }
}

export function arityText([min, max]: [number, number]): string {
  const n = (k: number) => `${k} argument${k === 1 ? "" : "s"}`;
  return min === max ? n(min) : `${min} to ${n(max)}`;
}

function binary(e: Extract<Expr, { kind: "binary" }>, ctx: Record<string, JsonValue>): JsonValue {
  if (e.op === "&&") return isTruthy(evaluate(e.left, ctx)) ? isTruthy(evaluate(e.right, ctx)) : false;
  if (e.op === "||") return isTruthy(evaluate(e.left, ctx)) ? true : isTruthy(evaluate(e.right, ctx));
  const l = evaluate(e.left, ctx);
  const r = evaluate(e.right, ctx);
  const bad = (what: string): never => {
    throw new LocatedError(`cannot ${what} ${typeOf(l)} and ${typeOf(r)}`, e.start, e.end);
  };
  switch (e.op) {
    case "==":
      return deepEqual(l, r);
    case "!=":
      return !deepEqual(l, r);
    case "<":
    case "<=":
    case ">":
    case ">=": {
      if (!((typeof l === "number" && typeof r === "number") || (typeof l === "string" && typeof r === "string"))) bad("compare");
      const c = l! < r! ? -1 : l! > r! ? 1 : 0;
      return e.op === "<" ? c < 0 : e.op === "<=" ? c <= 0 : e.op === ">" ? c > 0 : c >= 0;
    }
    case "in":
      if (Array.isArray(r)) return r.some((x) => deepEqual(x, l));
      if (typeof r === "string") return typeof l === "string" ? r.includes(l) : bad("look for");
      if (r !== null && typeof r === "object") return typeof l === "string" && Object.hasOwn(r, l);
      if (r === null) return false;
      return bad("look for");
    case "+":
      if (typeof l === "number" && typeof r === "number") return l + r;
      if (typeof l === "string" && typeof r === "string") return l + r;
      if (typeof l === "string" && (typeof r === "number" || typeof r === "boolean" || r === null)) return l + (r === null ? "" : String(r));
      if ((typeof l === "number" || typeof l === "boolean" || l === null) && typeof r === "string") return (l === null ? "" : String(l)) + r;
      if (Array.isArray(l) && Array.isArray(r)) return [...l, ...r];
      return bad("add");
    case "-":
    case "*":
    case "/":
    case "%": {
      if (typeof l !== "number" || typeof r !== "number") return bad(e.op === "-" ? "subtract" : e.op === "*" ? "multiply" : "divide");
      if ((e.op === "/" || e.op === "%") && r === 0) throw new LocatedError("division by zero", e.start, e.end);
      return e.op === "-" ? l - r : e.op === "*" ? l * r : e.op === "/" ? l / r : l % r;
    }
  }
}
