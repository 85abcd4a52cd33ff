import { describe, expect, it } from "vitest";
import { compilePipeline } from "../../src/machine/compile-pipeline.ts";
import { loadPipeline, validatePipelineText, type LoadedPipeline } from "../../src/pipeline/load-pipeline.ts";
import { runPreflight, type PreflightHost } from "../../src/run/preflight.ts";
import { checkMcpCommands } from "../../src/run/preflight.ts";

const PIPELINE = `phaseloop: 1
name: t
mcp:
  review: { command: [node, tools/review-server.mjs], env: { TOKEN: "{{ env.REVIEW_TOKEN }}" } }
  docs: { url: "http://127.0.0.1:8808/mcp" }
  local: { command: [./bin/srv], cwd: tools }
agents:
  worker: { preset: claude }
tools:
  reviewing: { read: ["**"], mcp: ["review/*", "docs/search"] }
phases:
  review: { agent: worker, mcp: [review, docs, local], tools: reviewing, prompt: "Review it now.", next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;

const codes = (l: { diagnostics: { code: string; severity: string }[] }) => l.diagnostics.filter((d) => d.severity === "error").map((d) => d.code);

describe("mcp servers in the pipeline", () => {
  it("are declared once and attached by name; the compiled phase and machine carry them", () => {
    const l = validatePipelineText(PIPELINE, "p.yaml");
    expect(l.diagnostics).toEqual([]);
    const { machine } = compilePipeline(l.doc!, { promptFiles: {}, file: "p.yaml" });
    expect(machine!.phases[0]!.mcp).toEqual(["review", "docs", "local"]);
    expect(Object.keys(machine!.mcp!)).toEqual(["review", "docs", "local"]);
  });

  it("a server needs command or url, not both; a run or ask phase attaches none", () => {
    const both = PIPELINE.replace('docs: { url: "http://127.0.0.1:8808/mcp" }', 'docs: { url: "http://x/mcp", command: [x] }');
    expect(codes(validatePipelineText(both, "p.yaml")).length).toBeGreaterThan(0);
    const run = PIPELINE.replace("review: { agent: worker,", "check: { run: [true], mcp: [docs] }\n  review: { agent: worker,");
    expect(codes(validatePipelineText(run, "p.yaml")).length).toBeGreaterThan(0);
  });

  it("a template in a server's env is checked like any other", () => {
    const bad = PIPELINE.replace("{{ env.REVIEW_TOKEN }}", "{{ env.REVIEW_TOKEN");
    expect(codes(validatePipelineText(bad, "p.yaml"))).toContain("TEMPLATE_SYNTAX");
  });
});

function host(files: Record<string, string>) {
  return { cwd: "/repo", readFile: async (p: string) => files[p.startsWith("/") ? p : `/repo/${p}`.replace(/\/\.\//g, "/")] };
}
const errors = (l: LoadedPipeline) => l.diagnostics.filter((d) => d.severity === "error");

describe("mcp servers through extends and include", () => {
  const BASE = `phaseloop: 1
name: base
mcp:
  review: { command: [node, review.mjs] }
  docs: { url: "http://127.0.0.1:1/mcp" }
agents:
  worker: { preset: claude }
phases:
  work: { agent: worker, mcp: [review], prompt: "Work on it now.", next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;

  it("merge by name like agents and tools: a server overridden, one removed, one added", async () => {
    const l = await loadPipeline("p.yaml", host({
      "/repo/base.yaml": BASE,
      "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./base.yaml\nmcp:\n  review: { env: { TOKEN: x } }\n  docs: null\n  extra: { command: [srv] }\n`,
    }));
    expect(errors(l)).toEqual([]);
    expect(l.doc!.mcp).toEqual({ review: { command: ["node", "review.mjs"], env: { TOKEN: "x" } }, extra: { command: ["srv"] } });
  });

  it("an override of a server the base does not declare is OVERRIDE_UNKNOWN with did-you-mean", async () => {
    const l = await loadPipeline("p.yaml", host({ "/repo/base.yaml": BASE, "/repo/p.yaml": `phaseloop: 1\nname: ours\nextends: ./base.yaml\nmcp:\n  reveiw: { env: { TOKEN: x } }\n` }));
    expect(errors(l).map((d) => [d.code, d.hint])).toEqual([["OVERRIDE_UNKNOWN", 'did you mean "review"?']]);
  });

  it("an included file may declare servers", async () => {
    const l = await loadPipeline("p.yaml", host({
      "/repo/servers.yaml": `phaseloop: 1\nmcp:\n  shared: { command: [srv] }\n`,
      "/repo/p.yaml": BASE.replace("name: base\n", "name: ours\ninclude: [./servers.yaml]\n").replace("mcp: [review]", "mcp: [review, shared]"),
    }));
    expect(errors(l)).toEqual([]);
    expect(Object.keys(l.doc!.mcp!)).toEqual(["shared", "review", "docs"]);
  });
});

describe("preflight of mcp servers", () => {
  const input = () => {
    const l = validatePipelineText(PIPELINE, "p.yaml");
    const { machine } = compilePipeline(l.doc!, { promptFiles: {}, file: "p.yaml" });
    return { machine: machine!, file: "p.yaml", text: PIPELINE, workdir: "/w", params: {} };
  };
  const preflightHost = (installed: string[]): PreflightHost => ({ env: {}, findProgram: async (p, cwd) => (installed.includes(p.startsWith("/") || !p.includes("/") ? p : `${cwd}/${p.replace(/^\.\//, "")}`) ? p : null), readVersion: async () => null });

  it("a stdio server whose program is missing is MCP_COMMAND_NOT_FOUND at its command, looked for from its cwd; a url server needs none", async () => {
    const r = await runPreflight(input(), preflightHost(["claude", "node"]), [checkMcpCommands]);
    expect(r.diagnostics.map((d) => [d.code, d.pointer])).toEqual([["MCP_COMMAND_NOT_FOUND", "/mcp/local/command/0"]]);
    expect(r.diagnostics[0]!.message).toContain("/w/tools");
    const ok = await runPreflight(input(), preflightHost(["claude", "node", "/w/tools/bin/srv"]), [checkMcpCommands]);
    expect(ok.diagnostics).toEqual([]);
  });
});

describe("the OS sandbox of a phase with an HTTP MCP server", () => {
  it("lets the server's host and port through, and no more", async () => {
    const { phaseProfile } = await import("../../src/run/phase-fence.ts");
    const l = validatePipelineText(PIPELINE, "p.yaml");
    const { machine } = compilePipeline(l.doc!, { promptFiles: {}, file: "p.yaml" });
    const profile = phaseProfile(machine!, machine!.phases[0]!, ["**"], { HOME: "/home/u" }, "/w", "/tmp/t");
    expect(profile.allowedHosts).toContain("127.0.0.1:8808");
    const without = { ...machine!, phases: [{ ...machine!.phases[0]!, mcp: ["review"] }] };
    expect(phaseProfile(without, without.phases[0]!, ["**"], { HOME: "/home/u" }, "/w", "/tmp/t").allowedHosts).not.toContain("127.0.0.1:8808");
  });
});
