import type { JsonValue } from "./json-value.ts";

/** A function's failure is a value-level error, reported by the evaluator, never a crash. */
export class EvalError extends Error {}

/**
 * What a function may ask of the one who evaluates: `readFile` reads a file
 * inside the workdir (at most `maxBytes`), supplied by the runner when it
 * renders a prompt. Without it, `file()` is an evaluation error.
 */
export interface EvalEnv {
  readFile?: (path: string, maxBytes: number) => string;
}

/** file()'s default size cap and the largest cap it accepts. */
export const FILE_DEFAULT_BYTES = 100_000;
export const FILE_MAX_BYTES = 1_000_000;

export interface FunctionDef {
  /** [min, max] argument count. */
  arity: [number, number];
  doc: string;
  example: string;
  /** Shapes of the accepted first argument, for the static checker. */
  firstArg?: ("string" | "array" | "object" | "number" | "boolean" | "null")[];
  fn: (...args: JsonValue[]) => JsonValue;
  /** A function that needs its environment (file()); `fn` is then what it does without one. */
  withEnv?: (env: EvalEnv, ...args: JsonValue[]) => JsonValue;
}

const typeOf = (v: JsonValue): string => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "object" ? "object" : typeof v);
const str = (v: JsonValue, fn: string): string => {
  if (typeof v === "string") return v;
  throw new EvalError(`${fn}() expects a string, got ${typeOf(v)}`);
};
const arr = (v: JsonValue, fn: string): JsonValue[] => {
  if (Array.isArray(v)) return v;
  throw new EvalError(`${fn}() expects a list, got ${typeOf(v)}`);
};
const numArg = (v: JsonValue, fn: string): number => {
  if (typeof v === "number") return v;
  throw new EvalError(`${fn}() expects a number, got ${typeOf(v)}`);
};

export function toText(v: JsonValue): string {
  if (v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
}

export function deepEqual(a: JsonValue, b: JsonValue): boolean {
  if (a === b) return true;
  if (typeof a === "number" && typeof b === "number") return a === b || (Number.isNaN(a) && Number.isNaN(b));
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as JsonValue[];
    return a.length === bb.length && a.every((x, i) => deepEqual(x, bb[i]!));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, JsonValue>)[k]!, (b as Record<string, JsonValue>)[k]!));
}

function compileRegex(pattern: string): RegExp {
  try {
    return new RegExp(pattern, "u");
  } catch {
    try {
      return new RegExp(pattern);
    } catch (error) {
      throw new EvalError(`invalid regular expression: ${(error as Error).message.replace(/^Invalid regular expression: /, "")}`);
    }
  }
}

export const FUNCTIONS: Record<string, FunctionDef> = {
  len: {
    arity: [1, 1], doc: "Length of a string, list or mapping; 0 for null.", example: "len(output.pending) == 0", firstArg: ["string", "array", "object", "null"],
    fn: (v) => (v === null ? 0 : typeof v === "string" ? [...v].length : Array.isArray(v) ? v.length : typeof v === "object" ? Object.keys(v).length : (() => { throw new EvalError(`len() expects a string, list or mapping, got ${typeOf(v)}`); })()),
  },
  contains: {
    arity: [2, 2], doc: "Whether a string contains a substring, a list an element, or a mapping a key.", example: "contains(text, 'DONE')",
    fn: (h, n) => (typeof h === "string" ? h.includes(toText(n)) : Array.isArray(h) ? h.some((x) => deepEqual(x, n)) : h !== null && typeof h === "object" ? Object.hasOwn(h, toText(n)) : h === null ? false : (() => { throw new EvalError(`contains() expects a string, list or mapping, got ${typeOf(h)}`); })()),
  },
  matches: { arity: [2, 2], doc: "Whether text matches a regular expression.", example: "matches(text, '^STATUS: (OK|DONE)$')", fn: (t, p) => compileRegex(str(p, "matches")).test(toText(t)) },
  starts_with: { arity: [2, 2], doc: "Whether text starts with a prefix.", example: "starts_with(task.id, 'US-')", fn: (t, p) => toText(t).startsWith(toText(p)) },
  ends_with: { arity: [2, 2], doc: "Whether text ends with a suffix.", example: "ends_with(params.file, '.md')", fn: (t, p) => toText(t).endsWith(toText(p)) },
  lower: { arity: [1, 1], doc: "Lowercase text.", example: "lower(output.verdict) == 'pass'", fn: (t) => toText(t).toLowerCase() },
  upper: { arity: [1, 1], doc: "Uppercase text.", example: "upper(output.status)", fn: (t) => toText(t).toUpperCase() },
  trim: { arity: [1, 1], doc: "Text without surrounding whitespace.", example: "trim(output.blocker) != ''", fn: (t) => toText(t).trim() },
  join: { arity: [1, 2], doc: "Join a list's items into text (default separator \", \").", example: "join(changes, '\\n')", fn: (a, s) => arr(a, "join").map(toText).join(s === undefined ? ", " : toText(s)) },
  split: { arity: [2, 2], doc: "Split text by a separator.", example: "split(output.files, ',')", fn: (t, s) => toText(t).split(toText(s)) },
  lines: { arity: [1, 1], doc: "The lines of a text.", example: "len(lines(text))", fn: (t) => toText(t).split(/\r?\n/) },
  tail: { arity: [2, 2], doc: "The last N lines of a text.", example: "tail(text, 20)", fn: (t, n) => toText(t).split(/\r?\n/).slice(-Math.max(0, Math.floor(numArg(n, "tail")))).join("\n") },
  keys: { arity: [1, 1], doc: "A mapping's keys.", example: "keys(output)", fn: (o) => (o !== null && typeof o === "object" && !Array.isArray(o) ? Object.keys(o) : (() => { throw new EvalError(`keys() expects a mapping, got ${typeOf(o)}`); })()) },
  values: { arity: [1, 1], doc: "A mapping's values.", example: "values(output)", fn: (o) => (o !== null && typeof o === "object" && !Array.isArray(o) ? Object.values(o) : (() => { throw new EvalError(`values() expects a mapping, got ${typeOf(o)}`); })()) },
  default: { arity: [2, 2], doc: "The value, or the fallback when it is null.", example: "default(output.verdict, 'REJECT')", fn: (v, f) => (v === null ? f : v) },
  int: {
    arity: [1, 1], doc: "A whole number from a number, numeric text or a boolean.", example: "int(output.last) == 1",
    fn: (v) => {
      const n = typeof v === "number" ? v : typeof v === "boolean" ? Number(v) : typeof v === "string" && v.trim() !== "" ? Number(v.trim()) : NaN;
      if (!Number.isFinite(n)) throw new EvalError(`int() cannot convert ${JSON.stringify(v)}`);
      return Math.trunc(n);
    },
  },
  number: {
    arity: [1, 1], doc: "A number from numeric text.", example: "number(output.score) >= 0.8",
    fn: (v) => {
      const n = typeof v === "number" ? v : typeof v === "boolean" ? Number(v) : typeof v === "string" && v.trim() !== "" ? Number(v.trim()) : NaN;
      if (!Number.isFinite(n)) throw new EvalError(`number() cannot convert ${JSON.stringify(v)}`);
      return n;
    },
  },
  string: { arity: [1, 1], doc: "A value as text (lists and mappings as JSON).", example: "string(exit_code)", fn: (v) => toText(v) },
  bool: { arity: [1, 1], doc: "A value's truthiness.", example: "bool(output.pending)", fn: (v) => isTruthy(v) },
  min: { arity: [1, 2], doc: "The smaller of two numbers, or the smallest in a list.", example: "min(iteration, 3)", fn: (a, b) => (b === undefined ? Math.min(...arr(a, "min").map((x) => numArg(x, "min"))) : Math.min(numArg(a, "min"), numArg(b, "min"))) },
  max: { arity: [1, 2], doc: "The larger of two numbers, or the largest in a list.", example: "max(run.tokens, 0)", fn: (a, b) => (b === undefined ? Math.max(...arr(a, "max").map((x) => numArg(x, "max"))) : Math.max(numArg(a, "max"), numArg(b, "max"))) },
  abs: { arity: [1, 1], doc: "Absolute value.", example: "abs(x)", fn: (a) => Math.abs(numArg(a, "abs")) },
  round: { arity: [1, 1], doc: "Nearest whole number.", example: "round(run.cost_usd)", fn: (a) => Math.round(numArg(a, "round")) },
  first: { arity: [1, 1], doc: "A list's first item (null when empty).", example: "first(output.pending)", fn: (a) => arr(a, "first")[0] ?? null },
  last: { arity: [1, 1], doc: "A list's last item (null when empty).", example: "last(history).iteration", fn: (a) => arr(a, "last").at(-1) ?? null },
  json: {
    arity: [1, 1], doc: "Parse JSON text.", example: "json(text).ok == true",
    fn: (t) => {
      try {
        return JSON.parse(str(t, "json")) as JsonValue;
      } catch (error) {
        if (error instanceof EvalError) throw error;
        throw new EvalError(`json() got text that is not JSON`);
      }
    },
  },
  file: {
    arity: [1, 2], doc: "A file's content (a path inside the workdir), read when a prompt is rendered; at most max_bytes (default 100000, at most 1000000), cut with a note beyond. Missing, a directory or outside the workdir: the phase fails. Only in prompts.", example: "file('TASK.md', 20000)", firstArg: ["string"],
    fn: () => {
      throw new EvalError("file() is read only when a prompt is rendered");
    },
    withEnv: (env, p, n) => {
      const path = str(p, "file");
      const cap = n === undefined ? FILE_DEFAULT_BYTES : Math.floor(numArg(n, "file"));
      if (!(cap > 0 && cap <= FILE_MAX_BYTES)) throw new EvalError(`file() takes a size cap from 1 to ${FILE_MAX_BYTES} bytes, got ${cap}`);
      if (!env.readFile) throw new EvalError("file() is read only when a prompt is rendered");
      try {
        return env.readFile(path, cap);
      } catch (error) {
        throw new EvalError(`file(${JSON.stringify(path)}): ${(error as Error).message}`);
      }
    },
  },
  to_json: { arity: [1, 1], doc: "A value as JSON text.", example: "to_json(output)", fn: (v) => JSON.stringify(v) },
};

/** null, false, 0, "", [] and {} are false; everything else is true. */
export function isTruthy(v: JsonValue): boolean {
  if (v === null || v === false || v === 0 || v === "") return false;
  if (typeof v === "number" && Number.isNaN(v)) return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v).length > 0;
  return true;
}
