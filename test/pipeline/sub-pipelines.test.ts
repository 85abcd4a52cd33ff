import { describe, expect, it } from "vitest";
import { formatDiagnostic, SourceMap } from "../../src/diagnostics/format-diagnostic.ts";
import { compilePipeline } from "../../src/machine/compile-pipeline.ts";
import { subgraphLines } from "../../src/machine/expand-graph.ts";
import { formatDot, formatMermaid } from "../../src/machine/format-graph.ts";
import { initialSnapshot, transition } from "../../src/machine/transition.ts";
import type { Effect, Machine } from "../../src/machine/types.ts";
import { loadPipeline, sourceTexts, type LoadedPipeline } from "../../src/pipeline/load-pipeline.ts";
import { checkMermaid } from "../machine/mermaid-check.ts";

/** A file system in memory; `cwd` is /repo. */
function host(files: Record<string, string>) {
  return { cwd: "/repo", readFile: async (p: string) => files[p.startsWith("/") ? p : `/repo/${p}`.replace(/\/\.\//g, "/")] };
}
const load = (files: Record<string, string>, file = "parent.yaml") => loadPipeline(file, host(files));
const errors = (l: LoadedPipeline) => l.diagnostics.filter((d) => d.severity === "error");
const printed = (l: LoadedPipeline) => l.diagnostics.map((d) => formatDiagnostic(d, new SourceMap(sourceTexts(l) as Record<string, string>), { frame: false })).join("\n");

const PARENT = `phaseloop: 1
name: parent
params:
  area: { type: string, default: api }
phases:
  plan: { run: "true" }
  analyse:
    pipeline: ./sub/analysis.yaml
    params: { area: "{{ params.area }}", depth: 2 }
    next:
      - if: "phases.analyse.output.outcome == 'complete'"
        stop: complete
        reason: "{{ output.reason }}"
      - stop: blocked
stop: { max_iterations: 1 }
`;
const CHILD = `phaseloop: 1
name: analysis
params:
  area: { type: string }
  depth: { type: integer, default: 1 }
phases:
  look: { run: "echo {{ params.area }} {{ params.depth }}" }
  judge:
    run: "true"
    next: [{ stop: complete }]
stop: { max_iterations: 2 }
`;
const files = { "/repo/parent.yaml": PARENT, "/repo/sub/analysis.yaml": CHILD };

describe("sub-pipelines: loading and validation", () => {
  it("load the child beside its parent, each valid, the child by the phase that runs it", async () => {
    const l = await load(files);
    expect(errors(l)).toEqual([]);
    expect(l.children?.analyse?.file).toBe("sub/analysis.yaml");
    expect(l.children?.analyse?.loaded.doc?.name).toBe("analysis");
  });

  it("locate a problem of the child in the child's file, with the phase of the parent that led there", async () => {
    const l = await load({ ...files, "/repo/sub/analysis.yaml": CHILD.replace('next: [{ stop: complete }]', 'next: [{ goto: jugde }]') });
    const [d] = errors(l);
    expect(d).toMatchObject({ code: "UNKNOWN_PHASE", file: "sub/analysis.yaml" });
    expect(printed(l)).toMatch(/^sub\/analysis\.yaml:10:\d+: error UNKNOWN_PHASE .*\n(?:hint: .*\n)?note: run by phase "analyse" of parent\.yaml \(parent\.yaml:8:15\)/m);
  });

  it("name every pipeline of a chain that comes back to itself, at the phase that closes it", async () => {
    const a = `phaseloop: 1\nname: a\nphases:\n  go: { pipeline: ./b.yaml, next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n`;
    const b = `phaseloop: 1\nname: b\nphases:\n  first: { run: "true" }\n  back: { pipeline: ./a.yaml, next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n`;
    const l = await load({ "/repo/a.yaml": a, "/repo/b.yaml": b }, "a.yaml");
    const cycle = errors(l).filter((d) => d.code === "SUB_PIPELINE_CYCLE");
    expect(cycle).toHaveLength(1);
    expect(cycle[0]).toMatchObject({ file: "b.yaml", pointer: "/phases/back/pipeline", message: expect.stringContaining("a.yaml → b.yaml → a.yaml") });
    expect(printed(l)).toMatch(/^b\.yaml:5:21: error SUB_PIPELINE_CYCLE .*\n.*\nnote: run by phase "go" of a\.yaml \(a\.yaml:4:19\)/m);
    // a pipeline that runs itself directly
    const self = await load({ "/repo/a.yaml": a.replace("./b.yaml", "./a.yaml") }, "a.yaml");
    expect(errors(self).map((d) => d.code)).toEqual(["SUB_PIPELINE_CYCLE"]);
  });

  it("check the bound params against the child's: an unknown one and a required one left out are located in the parent", async () => {
    const l = await load({ ...files, "/repo/parent.yaml": PARENT.replace('params: { area: "{{ params.area }}", depth: 2 }', "params: { aera: x }") });
    const ds = errors(l);
    expect(ds.map((d) => [d.code, d.file, d.pointer])).toEqual([
      ["SUB_PIPELINE_PARAM", "parent.yaml", "/phases/analyse/params/aera"],
      ["SUB_PIPELINE_PARAM", "parent.yaml", "/phases/analyse/params"],
    ]);
    expect(ds[0]!.hint).toBe('did you mean "area"?');
    expect(ds[1]!.message).toContain('does not bind param "area"');
  });

  it("refuse a child that cannot be found, a URL, and a package that is not installed, at the phase's pipeline value", async () => {
    for (const [spec, text] of [
      ["./missing.yaml", /cannot read "sub\/missing\.yaml"|no such file/],
      ["https://example.com/x.yaml", /is a URL/],
      ["@acme/loops/x.yaml", /not installed/],
    ] as const) {
      const l = await load({ ...files, "/repo/parent.yaml": PARENT.replace("./sub/analysis.yaml", spec.startsWith("./") ? "./sub/missing.yaml" : `"${spec}"`) });
      expect(errors(l).map((d) => [d.code, d.pointer])).toEqual([["SUB_PIPELINE_NOT_FOUND", "/phases/analyse/pipeline"]]);
      expect(errors(l)[0]!.message).toMatch(text);
    }
  });

  it("find a child in an installed package by its subpath, as extends does", async () => {
    const l = await load({
      "/repo/parent.yaml": PARENT.replace("./sub/analysis.yaml", '"@acme/loops/analysis.yaml"'),
      "/repo/node_modules/@acme/loops/package.json": JSON.stringify({ name: "@acme/loops", version: "1.2.0", exports: { "./analysis.yaml": "./pipelines/analysis.yaml" } }),
      "/repo/node_modules/@acme/loops/pipelines/analysis.yaml": CHILD,
    });
    expect(errors(l)).toEqual([]);
    expect(l.children?.analyse?.file).toMatch(/node_modules\/@acme\/loops\/pipelines\/analysis\.yaml$/);
  });

  it("refuse the keys of other kinds and a sub-pipeline as a group member", async () => {
    const mixed = await load({ ...files, "/repo/parent.yaml": PARENT.replace("pipeline: ./sub/analysis.yaml", "pipeline: ./sub/analysis.yaml\n    prompt: hi") });
    expect(errors(mixed).length).toBeGreaterThan(0);
    const member = await load({ ...files, "/repo/parent.yaml": PARENT.replace("  plan: { run: \"true\" }", "  plan: { run: \"true\" }\n  both: { parallel: [analyse] }") });
    expect(errors(member).map((d) => d.code)).toContain("GROUP_MEMBER");
  });

  it("check the parent's templates in params against the parent's context", async () => {
    const l = await load({ ...files, "/repo/parent.yaml": PARENT.replace("{{ params.area }}", "{{ params.aera }}") });
    expect(errors(l).map((d) => [d.code, d.file])).toEqual([["EXPR_UNKNOWN_PARAM", "parent.yaml"]]);
  });
});

function machineOf(l: LoadedPipeline): Machine {
  const c = compilePipeline(l.doc!, { promptFiles: l.promptFiles, file: l.file });
  expect(c.diagnostics).toEqual([]);
  return c.machine!;
}

describe("sub-pipelines: the machine", () => {
  it("compile a pipeline phase and run it as one phase.run with its params rendered in the parent's context", async () => {
    const machine = machineOf(await load(files));
    const analyse = machine.phases.find((p) => p.name === "analyse")!;
    expect(analyse).toMatchObject({ kind: "pipeline", pipeline: "./sub/analysis.yaml" });
    let s = initialSnapshot(machine, { runId: "r", params: { area: "billing" }, env: {}, pipeline: { name: "parent", file: "/repo/parent.yaml", dir: "/repo" }, workdir: "/repo" });
    let r = transition(machine, s, { type: "start", at: 0 });
    r = transition(machine, r.snapshot, { type: "phase.finished", at: 1, phase: "plan", attempt: 1, result: { exit_code: 0, output: {}, text: "", error: null, output_tail: "", tokens: 0, cost_usd: 0, duration_ms: 1, changes: [], jitter: 0 } });
    const run = r.effects.find((e): e is Extract<Effect, { type: "phase.run" }> => e.type === "phase.run")!;
    expect(run).toMatchObject({ phase: "analyse", kind: "pipeline", pipeline: "./sub/analysis.yaml", params: { area: "billing", depth: "2" } });
    s = r.snapshot;
    // the child's outcome is the phase's result, read by the parent's rules
    r = transition(machine, s, { type: "phase.finished", at: 2, phase: "analyse", attempt: 1, result: { exit_code: null, output: { outcome: "complete", reason: "judged" }, text: "judged", error: null, output_tail: "", tokens: 5, cost_usd: 0, duration_ms: 1, changes: [], jitter: 0 } });
    expect(r.snapshot.outcome).toMatchObject({ outcome: "complete", reason: { message: "judged" } });
    expect(r.snapshot.results.analyse).toMatchObject({ status: "succeeded", output: { outcome: "complete" }, tokens: 5 });
  });

  it("draw the child as one node, and open it into a subgraph with --expand", async () => {
    const l = await load(files);
    const machine = machineOf(l);
    const plain = formatMermaid(machine);
    expect(plain).toContain("pipeline ./sub/analysis.yaml");
    expect(plain).not.toContain("subgraph");
    const child = machineOf(l.children!.analyse!.loaded);
    const expanded = formatMermaid(machine, { analyse: { machine: child } });
    expect(checkMermaid(expanded)).toEqual([]);
    expect(expanded).toMatch(/^ {2}subgraph p_analyse__sub\["analyse: analysis"\]$/m);
    expect(expanded).toMatch(/^ {2}p_analyse__p_look\[/m);
    expect(expanded).toMatch(/^ {2}p_analyse -\.->\|"runs"\| p_analyse__start$/m);
    const dot = formatDot(machine, { analyse: { machine: child } });
    expect(dot).toMatch(/subgraph cluster_p_analyse__sub \{/);
    expect(dot).toMatch(/p_analyse__p_judge -> p_analyse__complete/);
    expect(subgraphLines(machine, undefined, { open: () => "o", close: () => "c", node: () => "n", edge: () => "e" })).toEqual([]);
  });
});
