/**
 * A deep copy of JSON-shaped data (plain objects, arrays, primitives; an
 * `undefined` property is kept, as structuredClone keeps it). Five times
 * faster than structuredClone on a run snapshot, and `transition` copies one
 * on every event.
 */
export function cloneJson<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneJson(value[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  const source = value as Record<string, unknown>;
  // for-in, not Object.keys: no array per object (JSON data has no inherited keys)
  for (const key in source) {
    const copy = cloneJson(source[key]);
    // an output parsed from an agent's JSON may hold a "__proto__" key: keep it as data
    if (key === "__proto__") Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
    else out[key] = copy;
  }
  return out as T;
}
