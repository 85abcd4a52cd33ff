import { describe, expect, it } from "vitest";
import * as api from "../src/index.ts";
import { readFileSync } from "node:fs";
import process from "node:process";
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

describe("the control layer, exported as control", () => {
  it("offers the operations the CLI, the MCP server and the ui share, and they work from the library", async () => {
    for (const op of ["startRun", "stopRun", "answerQuestion", "resumeRun", "getRun", "listRuns", "findRun", "readRunLog", "waitForRun", "listRecipes", "findRecipe", "validatePipeline"] as const) expect(typeof api.control[op], op).toBe("function");
    expect((await api.control.listRecipes(process.cwd())).map((r) => r.name)).toContain("plan-execute-review");
    expect(await api.control.validatePipeline(process.cwd(), { path: "pipelines/hailstone.yaml" })).toMatchObject({ valid: true });
    await expect(api.control.getRun(process.cwd(), "20000101-000000-none")).rejects.toBeInstanceOf(api.control.ControlError);
  });
});

describe("docs/diagnostics.md", () => {
  it("explains every diagnostic code", () => {
    const doc = readFileSync("docs/diagnostics.md", "utf8");
    for (const code of DIAGNOSTIC_CODES) expect(doc, code).toContain(`\`${code}\``);
  });
});
