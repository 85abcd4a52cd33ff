import fc from "fast-check";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import { globsOverlap } from "../../src/pipeline/check-groups.ts";

const segment = fc.constantFrom("a", "b", "src", "*", "**", "*.md", "a*", "x.md");
const glob = fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join("/"));
const path = fc.array(fc.constantFrom("a", "b", "src", "x.md", "ab", "c.md"), { minLength: 1, maxLength: 5 }).map((s) => s.join("/"));

describe("write globs of group members", () => {
  it("never miss an overlap: when some path matches both globs, they overlap", () => {
    fc.assert(
      fc.property(glob, glob, fc.array(path, { minLength: 1, maxLength: 30 }), (a, b, paths) => {
        const ma = picomatch(a, { dot: true });
        const mb = picomatch(b, { dot: true });
        if (paths.some((p) => ma(p) && mb(p))) expect(globsOverlap(a, b)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("tell disjoint directories apart", () => {
    expect(globsOverlap("reports/security/**", "reports/tests/**")).toBe(false);
    expect(globsOverlap("src/**", "test/**")).toBe(false);
    expect(globsOverlap("reports/**", "reports/tests/x.md")).toBe(true);
    expect(globsOverlap("**", "anything")).toBe(true);
    expect(globsOverlap("docs/*.md", "docs/readme.txt")).toBe(false);
    expect(globsOverlap("docs/*.md", "docs/readme.md")).toBe(true);
  });
});
