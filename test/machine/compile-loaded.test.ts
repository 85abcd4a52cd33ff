import { describe, expect, it } from "vitest";
import { compileLoaded } from "../../src/machine/compile-loaded.ts";
import { loadPipeline } from "../../src/pipeline/load-pipeline.ts";
import { hashedSources, pipelineHash, runFiles } from "../../src/run/run-info.ts";

/** A file system in memory; `cwd` is /repo. */
function host(files: Record<string, string>) {
  return { cwd: "/repo", readFile: async (p: string) => files[p.startsWith("/") ? p : `/repo/${p}`.replace(/\/\.\//g, "/")] };
}

const PARENT = `phaseloop: 1
name: parent
phases:
  plan: { run: "true" }
  analyse:
    pipeline: ./sub/analysis.yaml
    params: { area: api }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;
const CHILD = `phaseloop: 1
name: analysis
params:
  area: { type: string }
phases:
  look:
    prompt: ./look.md
    agent: a
  deeper:
    pipeline: ../leaf.yaml
    next: [{ stop: complete }]
agents: { a: { preset: claude } }
stop: { max_iterations: 2 }
`;
const LEAF = `phaseloop: 1\nname: leaf\nphases:\n  one: { run: "true", next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n`;
const files = { "/repo/parent.yaml": PARENT, "/repo/sub/analysis.yaml": CHILD, "/repo/sub/look.md": "look at {{ params.area }}", "/repo/leaf.yaml": LEAF };

describe("a sub-pipeline is compiled with its parent", () => {
  it("carry each child's machine in the parent's, by the phase that runs it, and theirs in turn", async () => {
    const loaded = await loadPipeline("parent.yaml", host(files));
    const { machine, diagnostics } = compileLoaded(loaded);
    expect(diagnostics).toEqual([]);
    const child = machine!.children!.analyse!;
    expect(child.file).toBe("sub/analysis.yaml");
    expect(child.machine.name).toBe("analysis");
    expect(child.machine.phases.map((p) => p.name)).toEqual(["look", "deeper"]);
    expect(child.machine.children!.deeper!.machine.name).toBe("leaf");
    expect(machine!.children!.plan).toBeUndefined();
  });

  it("keep the machine plain data, with the child's sources giving the same hash and files as loading it again would", async () => {
    const loaded = await loadPipeline("parent.yaml", host(files));
    const { machine } = compileLoaded(loaded);
    expect(JSON.parse(JSON.stringify(machine))).toEqual(machine);
    const child = loaded.children!.analyse!.loaded;
    const source = machine!.children!.analyse!.source;
    expect(pipelineHash(source.file, source.text, source.promptFiles, hashedSources(source))).toBe(pipelineHash(child.file, child.text, child.promptFiles, hashedSources(child)));
    expect(runFiles(source)).toEqual(runFiles(child));
    expect(runFiles(source).map((f) => f.role)).toContain("sub-pipeline");
  });

  it("compile nothing when a child is not valid: its problem is found when the parent is loaded, in the child's file", async () => {
    const loaded = await loadPipeline("parent.yaml", host({ ...files, "/repo/leaf.yaml": LEAF.replace("stop: complete", "goto: nowhere") }));
    expect(loaded.diagnostics.find((d) => d.severity === "error")).toMatchObject({ code: "UNKNOWN_PHASE", file: "leaf.yaml" });
    expect(compileLoaded(loaded).machine).toBeUndefined();
  });

  it("a pipeline without children compiles as compilePipeline does", async () => {
    const loaded = await loadPipeline("leaf.yaml", host(files));
    const { machine } = compileLoaded(loaded);
    expect(machine!.children).toBeUndefined();
    expect(machine!.name).toBe("leaf");
  });
});
