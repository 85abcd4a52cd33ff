import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cloneJson } from "../../src/machine/clone-json.ts";

/** Every object and array reachable from a value. */
function containers(value: unknown, out = new Set<object>()): Set<object> {
  if (typeof value === "object" && value !== null) {
    out.add(value);
    for (const v of Object.values(value)) containers(v, out);
  }
  return out;
}

describe("cloneJson", () => {
  it("copies any JSON value deeply: equal, and sharing no object with the original", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = cloneJson(value);
        expect(copy).toStrictEqual(value);
        expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
        const shared = [...containers(copy)].filter((c) => containers(value).has(c));
        expect(shared).toEqual([]);
      }),
    );
  });

  it("keeps a __proto__ key as data, without touching the prototype", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "a": [1, {"__proto__": 2}]}') as Record<string, unknown>;
    const copy = cloneJson(value);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(value));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("keeps undefined properties, as structuredClone does", () => {
    const value = { a: undefined, b: [undefined, null] };
    expect(cloneJson(value)).toStrictEqual(structuredClone(value));
  });
});
