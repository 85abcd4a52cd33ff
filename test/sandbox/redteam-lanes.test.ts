/**
 * Lanes and branches are named after task ids, which come from task files an
 * agent may write: distinct ids must give distinct names (before, `a b` and
 * `a-b-20rn` shared a lane and a branch), each a valid branch and file name.
 */
import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { laneName } from "../../src/lanes/lane-runner.ts";

describe("laneName", () => {
  it("the collision as met: a b and a-b-20rn", () => {
    expect(laneName("a b")).not.toBe(laneName("a-b-20rn"));
    expect(laneName("a-b-20rn")).toBe("a-b-20rn");
    expect(laneName("US-003")).toBe("US-003");
  });

  it("is injective on ids of up to 60 safe characters' worth", () => {
    const id = fc.string({ unit: fc.constantFrom("a", "b", "-", " ", ".", "+", "/", "é", "_", "~", "2", "0") , maxLength: 12 });
    fc.assert(fc.property(id, id, (x, y) => x === y || laneName(x) !== laneName(y)), { numRuns: 3000 });
  });

  it("gives a valid branch name and a plain file name", () => {
    const ids = fc.sample(fc.string({ unit: "binary", maxLength: 80 }), 60).concat(["..", ".", "a.lock", "-x", "", "a..b", "x/../y", "@{u}", "a~1^2:b"]);
    for (const id of ids) {
      const name = laneName(id);
      expect(name).toMatch(/^[A-Za-z0-9._+-]+$/);
      expect(name.length).toBeLessThanOrEqual(60);
      const r = spawnSync("git", ["check-ref-format", "--branch", `phaseloop/run/${name}`]);
      expect(r.status, `${JSON.stringify(id)} → ${name}`).toBe(0);
    }
  });
});
