import { mkdtempSync, writeFileSync, chmodSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePipeline } from "../../src/machine/compile-pipeline.ts";
import { validatePipelineText } from "../../src/pipeline/load-pipeline.ts";
import { firstWord } from "../../src/run/agent-programs.ts";
import { runPreflight, type PreflightCheck, type PreflightHost } from "../../src/run/preflight.ts";
import { findProgram } from "../../src/host/preflight-host.ts";

function load(text: string) {
  const loaded = validatePipelineText(text, "p.yaml");
  expect(loaded.diagnostics).toEqual([]);
  const { machine, diagnostics } = compilePipeline(loaded.doc!, { promptFiles: {}, file: "p.yaml" });
  expect(diagnostics).toEqual([]);
  return { machine: machine!, file: "p.yaml", text, workdir: "/w" };
}

/** A machine with the named programs installed; version reads are recorded and answered from `versions`. */
function host(installed: string[], versions: Record<string, string | null> = {}): PreflightHost & { reads: string[][] } {
  const reads: string[][] = [];
  return {
    env: {},
    reads,
    findProgram: async (program) => (installed.includes(program) ? `/usr/bin/${program}` : null),
    readVersion: async (argv) => {
      reads.push([...argv]);
      return versions[argv[0]!] ?? null;
    },
  };
}

const PIPELINE = `phaseloop: 1
name: t
params:
  agent: { type: string, default: "claude -p --verbose" }
agents:
  worker: { preset: claude, model: sonnet }
  checker: { preset: gemini }
  script: { command: [sh, -c, "{{ params.agent }}"] }
  direct: { command: ["./bin/agent.sh", x] }
  unused: { preset: codex }
phases:
  a: { agent: worker, prompt: "do it now" }
  b: { agent: checker, prompt: "check it now" }
  c: { agent: script, prompt: "run it now" }
  d: { agent: direct, prompt: "go on now", next: [{ stop: complete }] }
stop: { max_iterations: 2 }
`;

describe("preflight", () => {
  it("reports every agent whose program is missing at once, located at its preset or command, and skips unused agents", async () => {
    const input = load(PIPELINE);
    const r = await runPreflight({ ...input, params: { agent: "claude -p --verbose" } }, host([]));
    expect(r.diagnostics.map((d) => [d.code, d.pointer])).toEqual([
      ["AGENT_NOT_FOUND", "/agents/worker/preset"],
      ["AGENT_NOT_FOUND", "/agents/checker/preset"],
      ["AGENT_NOT_FOUND", "/agents/script/command/2"],
      ["AGENT_NOT_FOUND", "/agents/direct/command/0"],
    ]);
    const worker = r.diagnostics[0]!;
    expect(PIPELINE.slice(worker.start, worker.end)).toBe("claude");
    expect(worker.hint).toMatch(/Claude Code/);
    expect(r.diagnostics[2]!.hint).toMatch(/--param agent=/);
  });

  it("checks the program a param names, and reads the versions of the programs found without waiting for them", async () => {
    const input = load(PIPELINE);
    const h = host(["claude", "gemini", "./bin/agent.sh", "aider"], { claude: "2.1.197 (Claude Code)", gemini: "0.61.0" });
    const r = await runPreflight({ ...input, params: { agent: "aider --yes" } }, h);
    expect(r.diagnostics).toEqual([]);
    expect(await r.versions).toEqual({ worker: "2.1.197 (Claude Code)", checker: "0.61.0", script: "command: aider", direct: "command: ./bin/agent.sh" });
    expect(h.reads).toEqual([["claude", "--version"], ["gemini", "--version"]]);
  });

  it("records a version command that fails as unavailable", async () => {
    const input = load(PIPELINE);
    const r = await runPreflight({ ...input, params: { agent: "claude" } }, host(["claude", "gemini", "./bin/agent.sh"]));
    expect(await r.versions).toMatchObject({ worker: "unavailable", checker: "unavailable" });
  });

  it("takes more checks, which run together and are located the same way", async () => {
    const input = load(PIPELINE);
    const extra: PreflightCheck = async () => ({ problems: [{ code: "INTERNAL", message: "no sandbox", pointer: "/stop/max_iterations", severity: "warning" }] });
    const r = await runPreflight({ ...input, params: { agent: "claude" } }, host(["claude", "gemini", "./bin/agent.sh"]), [extra]);
    expect(r.diagnostics).toMatchObject([{ code: "INTERNAL", severity: "warning", file: "p.yaml" }]);
    expect(PIPELINE.slice(r.diagnostics[0]!.start, r.diagnostics[0]!.end)).toBe("2");
  });

  it("finds a script's program after assignments and leaves shell words alone", () => {
    expect(firstWord("FOO=1 BAR=2 codex exec -")).toBe("codex");
    expect(firstWord("  node agent.js")).toBe("node");
    expect(firstWord("cd x && claude")).toBeUndefined();
    expect(firstWord("$AGENT")).toBeUndefined();
    expect(firstWord("")).toBeUndefined();
  });
});

describe("finding a program as a spawn would", () => {
  it("looks along PATH for names and from the workdir for paths, and wants an executable file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "phaseloop-preflight-"));
    mkdirSync(join(dir, "bin"));
    writeFileSync(join(dir, "bin", "tool"), "#!/bin/sh\n");
    chmodSync(join(dir, "bin", "tool"), 0o755);
    writeFileSync(join(dir, "bin", "plain"), "not executable");
    mkdirSync(join(dir, "bin", "folder"));
    expect(await findProgram("tool", "/", `/nonexistent:${join(dir, "bin")}`)).toBe(join(dir, "bin", "tool"));
    expect(await findProgram("plain", "/", join(dir, "bin"))).toBeNull();
    expect(await findProgram("folder", "/", join(dir, "bin"))).toBeNull();
    expect(await findProgram("./bin/tool", dir, "")).toBe(join(dir, "bin", "tool"));
    expect(await findProgram("bin/tool", "/", "")).toBeNull();
  });
});
