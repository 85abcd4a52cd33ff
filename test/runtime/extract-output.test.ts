import { describe, expect, it } from "vitest";
import { extractJson, extractMatch, extractOutputs, extractSection, extractTag, parseFile } from "../../src/runtime/extract-output.ts";

const STATUS = String.raw`STATUS:\s*\**\s*(COMPLETE|INCOMPLETE)`;

describe("match", () => {
  it("reads a plain status line", () => {
    expect(extractMatch("work done\nSTATUS: COMPLETE\n", STATUS)).toBe("COMPLETE");
  });
  it("reads a bold status line (a seed missed **STATUS: COMPLETE**)", () => {
    expect(extractMatch("**STATUS: COMPLETE**", STATUS)).toBe("COMPLETE");
    expect(extractMatch("**STATUS:** COMPLETE", STATUS)).toBe("COMPLETE");
  });
  it("takes the last match, since agents restate their instructions first", () => {
    const text = "End with STATUS: COMPLETE or STATUS: INCOMPLETE.\n...\nSTATUS: INCOMPLETE";
    expect(extractMatch(text, STATUS)).toBe("INCOMPLETE");
  });
  it("returns the whole match without a group and undefined without a match", () => {
    expect(extractMatch("a 42 b", String.raw`\d+`)).toBe("42");
    expect(extractMatch("nothing", STATUS)).toBeUndefined();
  });
});

describe("tag", () => {
  it("reads the last verdict tag", () => {
    expect(extractTag("<verdict>REJECT</verdict> then <verdict> PASS </verdict>", "verdict")).toBe("PASS");
  });
  it("is undefined when the tag is missing, so the default applies", () => {
    const r = extractOutputs({ verdict: { tag: "verdict", default: "REJECT" } }, { text: "I think it passes", stdout: "", stderr: "", files: {} });
    expect(r.output.verdict).toBe("REJECT");
    expect(r.errors).toEqual([]);
  });
});

describe("section", () => {
  const text = "Done some.\n\nNEXT STEPS:\n- write tests\n- fix the parser\n\nThanks";
  it("reads list items under a colon heading", () => {
    expect(extractSection(text, "NEXT STEPS")).toEqual(["write tests", "fix the parser"]);
  });
  it("reads markdown and bold headings and numbered items", () => {
    expect(extractSection("## Next steps\n1. one\n2. two\n## Other", "NEXT STEPS")).toEqual(["one", "two"]);
    expect(extractSection("**NEXT STEPS:**\n* a\n", "NEXT STEPS")).toEqual(["a"]);
  });
  it("is undefined without the heading and empty with a heading but no items", () => {
    expect(extractSection("nothing here", "NEXT STEPS")).toBeUndefined();
    expect(extractSection("NEXT STEPS:\n\nprose", "NEXT STEPS")).toEqual([]);
  });
});

describe("json", () => {
  it("parses the whole message, a fenced block, or the last object", () => {
    expect(extractJson('{"a":1}', "")).toEqual({ a: 1 });
    expect(extractJson('Here:\n```json\n{"a":2}\n```\n', "")).toEqual({ a: 2 });
    expect(extractJson('text {"x":{"y":[1,2]}} end', "/x/y/1")).toBe(2);
    expect(extractJson("no json", "")).toBeUndefined();
  });
});

describe("file outputs", () => {
  it("parses TOML review files with pending items and a blocker", () => {
    const toml = 'loop = 2\nsummary = "ok"\nblocker = ""\n\n[[pending]]\nitem = "Concrete next step"\n';
    expect(parseFile(toml, "toml")).toEqual({ loop: 2, summary: "ok", blocker: "", pending: [{ item: "Concrete next step" }] });
  });
  it("fails a required output whose file was not written (a stale file is never read)", () => {
    const r = extractOutputs({ review: { file: ".phaseloop/review.toml", required: true } }, { text: "", stdout: "", stderr: "", files: { ".phaseloop/review.toml": undefined } }, { review: ".phaseloop/review.toml" });
    expect(r.errors.map((e) => e.name)).toEqual(["review"]);
    expect(r.output.review).toBeNull();
  });
  it("reports a file that does not parse", () => {
    const r = extractOutputs({ data: { file: "out.json" } }, { text: "", stdout: "", stderr: "", files: { "out.json": "{nope" } }, { data: "out.json" });
    expect(r.errors).toHaveLength(1);
  });
});

describe("schemas", () => {
  it("reports values that fail their schema through the injected checker", () => {
    const check = (schema: Record<string, unknown>, v: unknown) => (schema.type === "number" && typeof v !== "number" ? "must be number" : undefined);
    const r = extractOutputs({ n: { match: "n=(\\w+)", schema: { type: "number" } } }, { text: "n=abc", stdout: "", stderr: "", files: {} }, {}, check);
    expect(r.errors[0]?.message).toMatch(/schema/);
  });
});

describe("a structured answer beside the text", () => {
  it("is what json outputs read, while tag, match and section outputs read the text", () => {
    const specs = {
      verdict: { json: true as const, schema: { type: "object" } },
      score: { json: "/score" },
      status: { match: "STATUS: (\\w+)", required: true },
      reason: { tag: "reason", required: true },
      next: { section: "NEXT STEPS" },
    };
    const r = extractOutputs(specs, { text: "Done.\n<reason>tests pass</reason>\nSTATUS: COMPLETE\nNEXT STEPS:\n- ship it\n", stdout: "", stderr: "", files: {}, structured: { verdict: "pass", score: 3 } });
    expect(r.errors).toEqual([]);
    expect(r.output).toEqual({ verdict: { verdict: "pass", score: 3 }, score: 3, status: "COMPLETE", reason: "tests pass", next: ["ship it"] });
  });
  it("without one, json outputs read the text as before", () => {
    const r = extractOutputs({ v: { json: true } }, { text: '{"a":1}', stdout: "", stderr: "", files: {} });
    expect(r.output).toEqual({ v: { a: 1 } });
  });
});
