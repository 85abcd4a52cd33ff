import fc from "fast-check";
import { parseAllDocuments } from "yaml";
import { describe, expect, it } from "vitest";
import { parsePipelineText } from "../../src/pipeline/parse-pipeline-text.ts";

const duplicates = (text: string) => parsePipelineText(text, "p.yaml").diagnostics.filter((d) => d.code === "YAML_DUPLICATE_KEY").map((d) => d.start);

describe("duplicate keys", () => {
  it("are found in block and flow mappings at any depth, at the second key", () => {
    const text = "a: 1\nb:\n  c: {x: 1, y: 2, x: 3}\n  c: 2\na: 3\n";
    expect(duplicates(text)).toEqual([text.indexOf("x: 3"), text.indexOf("c: 2"), text.lastIndexOf("a: 3")]);
  });

  it("compare scalars by value and type, as yaml does", () => {
    expect(duplicates("1: a\n'1': b\n")).toEqual([]);
    expect(duplicates("'k': a\nk: b\n")).toEqual([7]);
  });

  it("agree with yaml's own check on generated mappings", () => {
    const key = fc.constantFrom("a", "b", "'a'", "1", "'1'", "true", "null", "~");
    const mapping: fc.Arbitrary<string> = fc.array(fc.tuple(key, fc.oneof(fc.constant("v"), fc.array(fc.tuple(key, fc.constant("w")), { maxLength: 4 }).map((ps) => `{${ps.map(([k, v]) => `${k}: ${v}`).join(", ")}}`))), { minLength: 1, maxLength: 6 }).map((ps) => ps.map(([k, v]) => `${k}: ${v}`).join("\n") + "\n");
    fc.assert(
      fc.property(mapping, (text) => {
        const theirs = parseAllDocuments(text, { uniqueKeys: true })[0]!;
        const expected = (Array.isArray(theirs) ? [] : theirs.errors).filter((e) => e.code === "DUPLICATE_KEY").map((e) => e.pos[0]).sort((a, b) => a - b);
        expect(duplicates(text)).toEqual(expected);
      }),
    );
  });

  it("cost a constant per key: 60,000 keys in one mapping are checked at once", () => {
    let text = "";
    for (let i = 0; i < 60_000; i++) text += `k${i}: 1\n`;
    text += "k5: 2\n";
    expect(duplicates(text)).toEqual([text.lastIndexOf("k5: 2")]);
  });
});
