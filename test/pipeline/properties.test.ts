import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DIAGNOSTIC_CODES } from "../../src/diagnostics/diagnostic.ts";
import { validatePipelineText } from "../../src/pipeline/load-pipeline.ts";

const seeds = ["test/fixtures/valid/brief-example.yaml", "pipelines/hailstone.yaml"].map((f) => readFileSync(f, "utf8"));

type Mutation = (text: string) => string;

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  // delete a range
  fc.tuple(fc.nat(), fc.integer({ min: 1, max: 12 })).map(([at, n]): Mutation => (t) => t.slice(0, at % (t.length + 1)) + t.slice((at % (t.length + 1)) + n)),
  // insert random unicode, astral and control characters included
  fc.tuple(fc.nat(), fc.string({ unit: fc.oneof(fc.constantFrom(":", "-", "{", "}", "[", "]", "'", '"', "\t", "\n", "#", "&", "*", "!", "|", ">", "\0", "\u2028"), fc.string({ unit: "binary", minLength: 1, maxLength: 1 })), maxLength: 6 }))
    .map(([at, s]): Mutation => (t) => t.slice(0, at % (t.length + 1)) + s + t.slice(at % (t.length + 1))),
  // duplicate a line
  fc.nat().map((n): Mutation => (t) => {
    const lines = t.split("\n");
    const i = n % lines.length;
    lines.splice(i, 0, lines[i]!);
    return lines.join("\n");
  }),
  // swap two lines
  fc.tuple(fc.nat(), fc.nat()).map(([a, b]): Mutation => (t) => {
    const lines = t.split("\n");
    const i = a % lines.length;
    const j = b % lines.length;
    [lines[i], lines[j]] = [lines[j]!, lines[i]!];
    return lines.join("\n");
  }),
  // change a line's indentation
  fc.tuple(fc.nat(), fc.integer({ min: -4, max: 4 })).map(([n, d]): Mutation => (t) => {
    const lines = t.split("\n");
    const i = n % lines.length;
    lines[i] = d > 0 ? " ".repeat(d) + lines[i] : lines[i]!.replace(new RegExp(`^ {0,${-d}}`), "");
    return lines.join("\n");
  }),
  // replace a scalar value by one of the wrong type
  fc.tuple(fc.nat(), fc.constantFrom("42", "true", "null", "[]", "{}", "''", "-1", "1.5", "~", "[a, b]", "'{{ x }}'", "'{{'")).map(([n, v]): Mutation => (t) => {
    const lines = t.split("\n");
    const i = n % lines.length;
    lines[i] = lines[i]!.replace(/: .*$/, `: ${v}`);
    return lines.join("\n");
  }),
  // replace a scalar value by an expression nested hundreds or thousands deep
  fc.tuple(fc.nat(), fc.constantFrom(".a", " && x", " || x", "[0]"), fc.integer({ min: 200, max: 4000 })).map(([n, step, depth]): Mutation => (t) => {
    const lines = t.split("\n");
    const i = n % lines.length;
    lines[i] = lines[i]!.replace(/: .*$/, `: "{{ x${step.repeat(depth)} }}"`);
    return lines.join("\n");
  }),
  // replace a scalar value by a recursive alias, or add an alias bomb
  fc.tuple(fc.nat(), fc.boolean()).map(([n, bomb]): Mutation => (t) => {
    const lines = t.split("\n");
    const i = n % lines.length;
    if (!bomb) lines[i] = lines[i]!.replace(/: .*$/, ": &r [ *r, *r ]");
    else {
      const levels = ["b0: &b0 [x, x, x, x, x, x, x, x, x, x]"];
      for (let k = 1; k < 10; k++) levels.push(`b${k}: &b${k} [${Array(10).fill(`*b${k - 1}`).join(", ")}]`);
      lines.splice(i, 0, ...levels);
    }
    return lines.join("\n");
  }),
);

describe("validation of mutated pipelines", () => {
  it("never throws, and every span lies inside its file with a known code", () => {
    fc.assert(
      fc.property(fc.constantFrom(...seeds), fc.array(mutation, { minLength: 1, maxLength: 4 }), (seed, mutations) => {
        const text = mutations.reduce((t, m) => m(t), seed);
        const result = validatePipelineText(text, "p.yaml", {});
        for (const d of result.diagnostics) {
          expect(DIAGNOSTIC_CODES).toContain(d.code);
          const len = d.file === "p.yaml" ? text.length : Infinity;
          expect(d.start).toBeGreaterThanOrEqual(0);
          expect(d.end).toBeGreaterThanOrEqual(d.start);
          expect(d.end).toBeLessThanOrEqual(len);
          expect(d.code).not.toBe("INTERNAL");
        }
      }),
      { numRuns: 600 },
    );
  });

  it("never throws on arbitrary text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), (text) => {
        const r = validatePipelineText(text, "p.yaml", {});
        for (const d of r.diagnostics) expect(d.end).toBeLessThanOrEqual(text.length);
      }),
      { numRuns: 300 },
    );
  });
});
