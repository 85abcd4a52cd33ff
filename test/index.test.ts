import { describe, expect, it } from "vitest";
import * as api from "../src/index.ts";
import { readFileSync } from "node:fs";
import { DIAGNOSTIC_CODES } from "../src/diagnostics/diagnostic.ts";

describe("the library API", () => {
  it("loads, validates, compiles and drives a pipeline", async () => {
    const loaded = await api.loadPipeline("pipelines/hailstone.yaml", api.nodeReadHost);
    expect(api.hasErrors(loaded.diagnostics)).toBe(false);
    const { machine } = api.compilePipeline(loaded.doc!, { promptFiles: loaded.promptFiles, file: loaded.file });
    const { params } = api.resolveParams(machine!, { start: "3" });
    const snap = api.initialSnapshot(machine!, { runId: "lib", params, pipeline: { name: "hailstone", file: loaded.file, dir: "pipelines" }, workdir: "." });
    const { effects } = api.transition(machine!, snap, { type: "start", at: 0 });
    expect(effects.find((e) => e.type === "phase.run")).toMatchObject({ phase: "step", prompt: expect.stringContaining("starts at 3") });
    expect(api.formatMermaid(machine!)).toMatch(/^flowchart TD/);
  });
});

describe("docs/diagnostics.md", () => {
  it("explains every diagnostic code", () => {
    const doc = readFileSync("docs/diagnostics.md", "utf8");
    for (const code of DIAGNOSTIC_CODES) expect(doc, code).toContain(`\`${code}\``);
  });
});
