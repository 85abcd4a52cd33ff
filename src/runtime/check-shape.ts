/**
 * Small structural checks for JSON read back from disk (state files a crash,
 * a disk or a person may have damaged). A check returns the first problem it
 * finds as `path: what is wrong`, or undefined for a usable value. Pure.
 */
export type Check = (value: unknown, path: string) => string | undefined;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === "number") return `the number ${value}`;
  if (value === undefined) return "nothing";
  return `${typeof value} ${String(value)}`;
}

function expected(what: string): Check {
  return (value, path) => `${path || "the file"}: expected ${what}, found ${describe(value)}`;
}

export const str: Check = (v, p) => (typeof v === "string" ? undefined : expected("a string")(v, p));
export const bool: Check = (v, p) => (typeof v === "boolean" ? undefined : expected("true or false")(v, p));
export const num: Check = (v, p) => (typeof v === "number" && Number.isFinite(v) ? undefined : expected("a number")(v, p));
/** A whole number of at least 0. */
export const count: Check = (v, p) => (typeof v === "number" && Number.isInteger(v) && v >= 0 ? undefined : expected("a whole number of at least 0")(v, p));

/** Any JSON value: what params and extracted outputs hold. */
export const json: Check = (v, p) => {
  if (v === null || typeof v === "string" || typeof v === "boolean") return undefined;
  if (typeof v === "number") return Number.isFinite(v) ? undefined : expected("a JSON value")(v, p);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const problem = json(v[i], `${p}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (typeof v === "object") return recordOf(json)(v, p);
  return expected("a JSON value")(v, p);
};

export function literal(...values: readonly (string | number | boolean | null)[]): Check {
  return (v, p) => (values.includes(v as string) ? undefined : expected(`one of ${values.map((x) => JSON.stringify(x)).join(", ")}`)(v, p));
}

export function nullable(check: Check): Check {
  return (v, p) => (v === null ? undefined : check(v, p));
}

/** Absent (or undefined) is fine; present must pass. */
export function optional(check: Check): Check {
  return (v, p) => (v === undefined ? undefined : check(v, p));
}

export function arrayOf(check: Check): Check {
  return (v, p) => {
    if (!Array.isArray(v)) return expected("a list")(v, p);
    for (let i = 0; i < v.length; i++) {
      const problem = check(v[i], `${p}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function join(path: string, key: string): string {
  const part = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key);
  return path ? (part === key ? `${path}.${key}` : `${path}[${part}]`) : part;
}

export function recordOf(check: Check): Check {
  return (v, p) => {
    if (!isObject(v)) return expected("an object")(v, p);
    for (const [key, value] of Object.entries(v)) {
      const problem = check(value, join(p, key));
      if (problem) return problem;
    }
    return undefined;
  };
}

/** An object with these fields (others are allowed: newer versions may add some). */
export function obj(fields: Record<string, Check>): Check {
  return (v, p) => {
    if (!isObject(v)) return expected("an object")(v, p);
    for (const [key, check] of Object.entries(fields)) {
      const problem = check(v[key], join(p, key));
      if (problem) return problem;
    }
    return undefined;
  };
}

/** An object whose `field` picks the shape of the rest. */
export function tagged(field: string, shapes: Record<string, Check>): Check {
  return (v, p) => {
    if (!isObject(v)) return expected("an object")(v, p);
    const tag = v[field];
    const shape = typeof tag === "string" && Object.hasOwn(shapes, tag) ? shapes[tag] : undefined;
    if (!shape) return literal(...Object.keys(shapes))(tag, join(p, field));
    return shape(v, p);
  };
}

/** A check with a further condition: `test` returns a problem (without the path) or undefined. */
export function where(check: Check, test: (value: never) => string | undefined): Check {
  return (v, p) => {
    const problem = check(v, p);
    if (problem) return problem;
    const extra = test(v as never);
    return extra ? `${p || "the file"}: ${extra}` : undefined;
  };
}
