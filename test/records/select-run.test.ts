import { describe, expect, it } from "vitest";
import { findBreakers } from "../../src/records/read-breakers.ts";
import { closestMatches, editDistance } from "../../src/records/select-run.ts";

describe("closestMatches", () => {
  it("suggests the nearest run ids, best first", () => {
    const ids = ["20261101-120400-ab12", "20261101-120400-zz99", "20251231-000000-0000"];
    expect(closestMatches("20261101-120400-ab13", ids)[0]).toBe("20261101-120400-ab12");
    expect(closestMatches("something-else", ids)).toEqual([]);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });
});

describe("findBreakers", () => {
  it("takes counts from the state and limits from limit-like paths", () => {
    const state = { machine: { counters: { consecutiveFailures: 1, no_progress_streak: 2 } } };
    const run = { stop: { consecutive_failures: 3, no_progress: 4, max_iterations: 10 } };
    expect(findBreakers(state, run)).toEqual({ consecutive_failures: { count: 1, limit: 3 }, no_progress: { count: 2, limit: 4 } });
  });

  it("finds nothing in data without breaker fields", () => {
    expect(findBreakers(null, [1, 2], { a: { b: "c" } })).toEqual({});
  });
});
