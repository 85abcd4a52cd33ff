import { describe, expect, it } from "vitest";
import { formatDiagnostic, SourceMap } from "../../src/diagnostics/format-diagnostic.ts";
import { loadPipeline, sourceTexts, type LoadedPipeline } from "../../src/pipeline/load-pipeline.ts";

/** A file system in memory; `cwd` is /repo. */
function host(files: Record<string, string>) {
  return { cwd: "/repo", readFile: async (p: string) => files[p.startsWith("/") ? p : `/repo/${p}`.replace(/\/\.\//g, "/")] };
}
const load = (files: Record<string, string>, file = "p.yaml") => loadPipeline(file, host(files));
const errors = (l: LoadedPipeline) => l.diagnostics.filter((d) => d.severity === "error");
const printed = (l: LoadedPipeline) => l.diagnostics.map((d) => formatDiagnostic(d, new SourceMap(sourceTexts(l) as Record<string, string>), { frame: false })).join("\n");

const BASE = `phaseloop: 1
name: base
params:
  task_file: { type: string, default: TASK.md }
agents:
  worker: { command: [sh, -c, "echo {{ params.task_file }}"] }
  reviewer: { command: [sh, -c, "echo ok"] }
tools:
  edit: { read: ["**"], write: ["src/**", "test/**"] }
  look: { read: ["**"] }
phases:
  work: { agent: worker, prompt: prompts/work.md, tools: edit }
  review:
    agent: reviewer
    prompt: "Review {{ params.task_file }}"
    tools: look
    next:
      - if: "true"
        stop: complete
stop: { max_iterations: 3, no_progress: 2 }
`;
const base = { "/repo/shared/base.yaml": BASE, "/repo/shared/prompts/work.md": "work on it" };

describe("extends", () => {
  it("merges maps key by key, the extending file winning, and keeps the base's order", async () => {
    const l = await load({ ...base, "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\nparams: { task_file: { default: docs/TASK.md } }\nagents: { worker: { command: [sh, -c, "echo ours"] } }\nstop: { max_iterations: 8 }\n` });
    expect(errors(l)).toEqual([]);
    expect(l.doc!.name).toBe("ours");
    expect(l.doc!.params!.task_file).toEqual({ type: "string", default: "docs/TASK.md" });
    expect(l.doc!.agents!.worker!.command).toEqual(["sh", "-c", "echo ours"]);
    expect(l.doc!.stop).toEqual({ max_iterations: 8, no_progress: 2 });
    expect(Object.keys(l.doc!.phases)).toEqual(["work", "review"]);
    expect("extends" in l.doc!).toBe(false);
  });

  it("replaces lists whole and removes with null", async () => {
    const l = await load({ ...base, "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\ntools: { edit: { write: [lib/**] }, look: null }\nphases: { review: { tools: null } }\n` });
    expect(errors(l)).toEqual([]);
    expect(l.doc!.tools).toEqual({ edit: { read: ["**"], write: ["lib/**"] } });
    expect(l.doc!.phases.review!.tools).toBeUndefined();
  });

  it("adds a whole new phase, and removes one", async () => {
    const l = await load({ ...base, "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\nphases:\n  review: null\n  check: { run: "npm test", next: [{ if: "phases.check.exit_code == 0", stop: complete }] }\n` });
    expect(errors(l)).toEqual([]);
    expect(Object.keys(l.doc!.phases)).toEqual(["work", "check"]);
  });

  it("resolves a base's prompt against the base, and {{ pipeline.dir }} to the base's folder", async () => {
    const l = await load({
      "/repo/lib/loops/base.yaml": `phaseloop: 1\nname: b\nphases:\n  work: { agent: a, prompt: prompts/w.md }\n  check: { run: [node, "{{ pipeline.dir }}/check.mjs"], next: [{ if: \"true\", stop: complete }] }\nagents: { a: { command: [x] } }\nstop: { max_iterations: 1 }\n`,
      "/repo/lib/loops/prompts/w.md": "work",
      "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./lib/loops/base.yaml\n`,
    });
    expect(errors(l)).toEqual([]);
    expect(l.doc!.phases.work!.prompt).toBe("lib/loops/prompts/w.md");
    expect(l.promptFiles).toEqual({ "lib/loops/prompts/w.md": "work" });
    expect(l.doc!.phases.check!.run).toEqual(["node", "{{ pipeline.dir }}/lib/loops/check.mjs"]);
  });

  it("chains bases, the nearest file winning", async () => {
    const l = await load({
      ...base,
      "/repo/shared/mid.yaml": `phaseloop: 1\nname: mid\nextends: ./base.yaml\nstop: { max_iterations: 5 }\nagents: { reviewer: { command: [sh, -c, mid] } }\n`,
      "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/mid.yaml\nstop: { max_iterations: 9 }\n`,
    });
    expect(errors(l)).toEqual([]);
    expect(l.doc!.stop.max_iterations).toBe(9);
    expect(l.doc!.agents!.reviewer!.command).toEqual(["sh", "-c", "mid"]);
    expect(l.files!.map((f) => [f.file, f.role])).toEqual([["p.yaml", "pipeline"], ["shared/mid.yaml", "extends"], ["shared/base.yaml", "extends"]]);
  });

  it("reports a cycle where it closes, with the chain", async () => {
    const l = await load({
      "/repo/a.yaml": `phaseloop: 1\nname: a\nextends: ./b.yaml\n`,
      "/repo/b.yaml": `phaseloop: 1\nname: b\nextends: ./a.yaml\n`,
      "/repo/p.yaml": `phaseloop: 1\nname: p\nextends: ./a.yaml\n`,
    });
    const [e] = errors(l);
    expect(e).toMatchObject({ code: "EXTENDS_CYCLE", file: "b.yaml" });
    expect(e!.message).toContain("a.yaml → b.yaml → a.yaml");
    expect(printed(l)).toMatch(/^b\.yaml:3:10: error EXTENDS_CYCLE/);
    expect(printed(l)).toContain("note: extended by a.yaml (a.yaml:3:10)");
    expect(printed(l)).toContain("note: extended by p.yaml (p.yaml:3:10)");
  });

  it("a file that extends itself is a cycle", async () => {
    const l = await load({ "/repo/p.yaml": `phaseloop: 1\nname: p\nextends: ./p.yaml\n` });
    expect(errors(l)[0]).toMatchObject({ code: "EXTENDS_CYCLE", file: "p.yaml" });
  });

  it("locates a problem inside a base at its line in the base, with the chain", async () => {
    const l = await load({
      ...base,
      "/repo/shared/base.yaml": BASE.replace("tools: look\n", "tools: lok\n"),
      "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\n`,
    });
    const text = printed(l);
    expect(text).toMatch(/^shared\/base\.yaml:16:12: error UNKNOWN_TOOLS/m);
    expect(text).toContain("note: extended by p.yaml (p.yaml:3:10)");
  });

  it("locates schema errors, YAML errors and expression errors in the file that has them", async () => {
    const bad = await load({ ...base, "/repo/shared/base.yaml": BASE.replace("max_iterations: 3", "max_iterations: -1"), "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\n` });
    expect(printed(bad)).toMatch(/^shared\/base\.yaml:20:25: error SCHEMA_RANGE/m);
    const yaml = await load({ ...base, "/repo/shared/base.yaml": BASE + "stop: again\n", "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\n` });
    expect(printed(yaml)).toMatch(/^shared\/base\.yaml:21:1: error YAML_DUPLICATE_KEY/m);
    const expr = await load({ ...base, "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\nphases:\n  review:\n    next:\n      - if: "phases.wrk.status == 'failed'"\n        stop: failed\n` });
    expect(printed(expr)).toMatch(/^p\.yaml:7:21: error EXPR_UNKNOWN_PHASE/m);
  });

  it("says did-you-mean for an override that names nothing in the base", async () => {
    const l = await load({ ...base, "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./shared/base.yaml\nphases:\n  reviw: { prompt: x.md }\nagents:\n  workr: { model: m }\ntools:\n  lok: null\n` });
    const e = errors(l);
    expect(e.map((d) => [d.code, d.hint])).toEqual([
      ["OVERRIDE_UNKNOWN", 'did you mean "review"?'],
      ["OVERRIDE_UNKNOWN", 'did you mean "worker"?'],
      ["OVERRIDE_UNKNOWN", 'did you mean "look"?'],
    ]);
    expect(printed(l)).toMatch(/^p\.yaml:5:3: error OVERRIDE_UNKNOWN overrides phase "reviw", which shared\/base\.yaml does not define/m);
  });

  it("says where a base is missing, and refuses URLs", async () => {
    const missing = await load({ "/repo/p.yaml": `phaseloop: 1\nname: p\nextends: ./nope.yaml\n` });
    expect(errors(missing)[0]).toMatchObject({ code: "EXTENDS_NOT_FOUND", file: "p.yaml", start: 30 });
    const url = await load({ "/repo/p.yaml": `phaseloop: 1\nname: p\nextends: https://example.com/x.yaml\n` });
    expect(errors(url)[0]!.message).toMatch(/fetches nothing/);
  });
});

describe("include", () => {
  const catalogue = `agents:\n  worker: { command: [sh, -c, "echo cat"] }\n  reviewer: { command: [sh, -c, "echo rev"] }\ntools:\n  edit: { read: ["**"], write: ["src/**"] }\n`;
  const pipeline = `phaseloop: 1\nname: p\ninclude: [./team/agents.yaml]\nagents: { reviewer: { command: [sh, -c, "echo mine"] } }\nphases:\n  work: { agent: worker, prompt: "do it", tools: edit }\n  review: { agent: reviewer, prompt: "check", next: [{ if: "true", stop: complete }] }\nstop: { max_iterations: 2 }\n`;

  it("merges agents, tools and params in, the including file winning", async () => {
    const l = await load({ "/repo/team/agents.yaml": catalogue, "/repo/p.yaml": pipeline });
    expect(errors(l)).toEqual([]);
    expect(l.doc!.agents!.worker!.command).toEqual(["sh", "-c", "echo cat"]);
    expect(l.doc!.agents!.reviewer!.command).toEqual(["sh", "-c", "echo mine"]);
    expect(l.doc!.tools!.edit!.write).toEqual(["src/**"]);
  });

  it("a name defined by two includes is an error at the second, pointing at the first", async () => {
    const l = await load({ "/repo/team/agents.yaml": catalogue, "/repo/team/more.yaml": `agents:\n  worker: { preset: claude }\n`, "/repo/p.yaml": pipeline.replace("[./team/agents.yaml]", "[./team/agents.yaml, ./team/more.yaml]") });
    const text = printed(l);
    expect(text).toMatch(/^team\/more\.yaml:2:3: error INCLUDE_CONFLICT agent "worker" is defined by two included files/m);
    expect(text).toContain("note: first defined in team/agents.yaml (team/agents.yaml:2:3)");
    expect(text).toContain("note: included by p.yaml (p.yaml:3:31)");
  });

  it("an include holds only agents, tools and params", async () => {
    const l = await load({ "/repo/team/agents.yaml": catalogue + "phases: {}\n", "/repo/p.yaml": pipeline });
    expect(errors(l)[0]).toMatchObject({ code: "INCLUDE_KEY", file: "team/agents.yaml" });
  });

  it("a problem inside an include is located there", async () => {
    const l = await load({ "/repo/team/agents.yaml": catalogue.replace("command: [sh, -c, \"echo cat\"]", "preset: clade"), "/repo/p.yaml": pipeline });
    expect(printed(l)).toMatch(/^team\/agents\.yaml:2:21: error SCHEMA_ENUM/m);
  });
});

describe("bare specifiers", () => {
  const pkg = (exports: unknown) => ({
    "/repo/node_modules/@acme/loops/package.json": JSON.stringify({ name: "@acme/loops", version: "2.1.0", exports }),
    "/repo/node_modules/@acme/loops/pipelines/base.yaml": BASE.replace("prompt: prompts/work.md", "prompt: \"work\""),
  });
  const p = `phaseloop: 1\nname: ours\nextends: "@acme/loops/base.yaml"\n`;

  it("resolve through node_modules from the pipeline's folder upward, honouring exports", async () => {
    const l = await load({ ...pkg({ "./*.yaml": "./pipelines/*.yaml" }), "/repo/deep/er/p.yaml": p }, "deep/er/p.yaml");
    expect(errors(l)).toEqual([]);
    expect(l.files![1]).toMatchObject({ file: "node_modules/@acme/loops/pipelines/base.yaml", package: { name: "@acme/loops", version: "2.1.0" } });
  });

  it("a subpath the package does not export is an error that lists what it does", async () => {
    const l = await load({ ...pkg({ "./recipes/*.yaml": { phaseloop: "./pipelines/*.yaml" } }), "/repo/p.yaml": p });
    expect(errors(l)[0]).toMatchObject({ code: "EXTENDS_NOT_FOUND", message: expect.stringMatching(/does not export "\.\/base\.yaml"/), hint: "its exports: ./recipes/*.yaml" });
  });

  it("a package that is not installed says how to install it", async () => {
    const l = await load({ "/repo/p.yaml": p });
    expect(errors(l)[0]).toMatchObject({ code: "EXTENDS_NOT_FOUND", hint: "install it: npm install @acme/loops" });
  });
});
