import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { validatePipelineText } from "../../src/pipeline/load-pipeline.ts";

/** An agent phase's output file must be one it can write (OUTPUT_FILE_UNWRITABLE). */
const pipeline = (o: { sandbox?: string; tools?: string; file: string; phaseSandbox?: string }) =>
  [
    "phaseloop: 1",
    "name: outputs",
    ...(o.sandbox ? [`sandbox: ${o.sandbox}`] : []),
    "agents:",
    "  w: { command: [sh, -c, 'true'] }",
    "tools:",
    `  t: ${o.tools ?? "{ read: ['**'], write: ['src/**'] }"}`,
    "phases:",
    "  review:",
    "    agent: w",
    "    tools: t",
    "    prompt: Review.",
    ...(o.phaseSandbox ? [`    sandbox: ${o.phaseSandbox}`] : []),
    `    output: { review: { file: ${JSON.stringify(o.file)}, required: true } }`,
    "    next: [{ stop: complete }]",
    "stop: { max_iterations: 1 }",
    "",
  ].join("\n");

const found = (text: string) => validatePipelineText(text, "p.yaml", {}).diagnostics.filter((d) => d.code === "OUTPUT_FILE_UNWRITABLE").map((d) => ({ severity: d.severity, pointer: d.pointer }));

describe("an output file the phase cannot write", () => {
  it("under .phaseloop/ is a warning with sandbox: auto (the default), an error with required, nothing with off", () => {
    const ptr = "/phases/review/output/review/file";
    expect(found(pipeline({ file: ".phaseloop/review_output.toml", tools: "{ read: ['**'], write: ['.phaseloop/**'] }" }))).toEqual([{ severity: "warning", pointer: ptr }]);
    expect(found(pipeline({ file: "./.phaseloop/r.toml", sandbox: "required" }))).toEqual([{ severity: "error", pointer: ptr }]);
    expect(found(pipeline({ file: ".phaseloop/r.toml", sandbox: "off" }))).toEqual([]);
    // the phase's own sandbox wins
    expect(found(pipeline({ file: ".phaseloop/r.toml", sandbox: "required", phaseSandbox: "off" }))).toEqual([]);
  });

  it("outside the tool set's write globs is an error; inside them, or in the artifacts folder, is fine", () => {
    expect(found(pipeline({ file: "report.json" }))).toEqual([{ severity: "error", pointer: "/phases/review/output/review/file" }]);
    expect(found(pipeline({ file: "src/report.json" }))).toEqual([]);
    expect(found(pipeline({ file: "{{ run.artifacts }}/review.toml" }))).toEqual([]);
    expect(found(pipeline({ file: "{{run.artifacts}}/review.toml", tools: "{ read: ['**'] }", sandbox: "required" }))).toEqual([]);
    // known only once rendered
    expect(found(pipeline({ file: "{{ params.out }}" }).replace("phases:", "params: { out: { type: string, default: x } }\nphases:"))).toEqual([]);
  });

  it("the execute-review recipe and the format reference's headline example pass; their old review path did not", () => {
    const recipe = readFileSync("pipelines/execute-review.yaml", "utf8");
    expect(found(recipe)).toEqual([]);
    expect(found(recipe.replace('"{{ run.artifacts }}/review_output.toml"', ".phaseloop/review_output.toml"))).toHaveLength(1);
    const doc = readFileSync("docs/format.md", "utf8");
    const example = /## A complete example\n\n```yaml\n([\s\S]*?)```/.exec(doc)![1]!;
    expect(example).toContain("{{ run.artifacts }}/review_output.toml");
    expect(found(example)).toEqual([]);
  });
});
