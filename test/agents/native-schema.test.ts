import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nativeOutputSchema } from "../../src/agents/native-schema.ts";
import type { OutputSpec } from "../../src/pipeline/spec.ts";

const schema = { type: "object", properties: { verdict: { type: "string" } }, required: ["verdict"] };

describe("the schema an agent enforces itself", () => {
  it("codex and the built-in agent: only when the json output is the only one reading the final message", () => {
    for (const preset of ["codex", "openai"]) {
      expect(nativeOutputSchema({ verdict: { json: true, schema } }, preset)).toEqual(schema);
      expect(nativeOutputSchema({ verdict: { json: true, schema }, notes: { file: "notes.md" }, log: { from: "stdout", match: "x" } }, preset)).toEqual(schema);
      // under a schema the final message is the JSON: a match, tag or section beside it would find nothing
      expect(nativeOutputSchema({ verdict: { json: true, schema }, status: { match: "STATUS: (\\w+)" } }, preset)).toBeUndefined();
      expect(nativeOutputSchema({ verdict: { json: true, schema }, reason: { tag: "reason" } }, preset)).toBeUndefined();
      expect(nativeOutputSchema({ verdict: { json: true, schema }, plan: { section: "Plan" } }, preset)).toBeUndefined();
      expect(nativeOutputSchema({ verdict: { json: true, schema }, score: { json: "/score" } }, preset)).toBeUndefined();
    }
  });

  it("claude keeps its answer beside its text: always, with one json output with a schema", () => {
    expect(nativeOutputSchema({ verdict: { json: true, schema }, status: { match: "STATUS: (\\w+)" }, reason: { tag: "reason" } }, "claude")).toEqual(schema);
  });

  it("none without exactly one json: true output with a schema", () => {
    expect(nativeOutputSchema({ verdict: { json: true } }, "codex")).toBeUndefined();
    expect(nativeOutputSchema({ a: { json: true, schema }, b: { json: true, schema } }, "claude")).toBeUndefined();
  });

  it("property: a schema is asked for only when every output of the phase can still be read", () => {
    const other = fc.constantFrom<OutputSpec>({ match: "S: (\\w+)" }, { tag: "t" }, { section: "S" }, { json: "/a" }, { file: "f.json" }, { from: "stdout", match: "x" }, { from: "stderr", tag: "t" });
    fc.assert(
      fc.property(fc.constantFrom("codex", "openai", "claude", "gemini", undefined), fc.array(other, { maxLength: 4 }), (preset, others) => {
        const outputs: Record<string, OutputSpec> = { main: { json: true, schema } };
        others.forEach((o, i) => (outputs[`o${i}`] = o));
        const got = nativeOutputSchema(outputs, preset);
        const textReaders = others.filter((o) => o.file === undefined && (o.from ?? "text") === "text");
        expect(got).toEqual(preset === "claude" || textReaders.length === 0 ? schema : undefined);
      }),
    );
  });
});
