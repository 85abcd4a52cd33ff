import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeServer } from "../agents/fake-openai.ts";
import { cli, ensureBuilt, events, git, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);
const servers: FakeServer[] = [];
afterAll(() => servers.forEach((s) => s.stop()));

const pipeline = (base: string) => `phaseloop: 1
name: local-model
agents:
  local: { preset: openai, model: qwen-test, base_url: "${base}" }
tools:
  build: { read: ["**"], write: ["src/**"], bash: ["echo *"] }
phases:
  execute:
    agent: local
    tools: build
    prompt: "Add {{ params.file }}."
    retry: { max_attempts: 2, interval: 100ms }
    output:
      status: { match: 'STATUS: (\\w+)' }
    next:
      - if: output.status == 'COMPLETE'
        stop: complete
      - goto: execute
params:
  file: { type: string, default: src/b.ts }
stop: { max_iterations: 2 }
`;

describe("phaseloop run with the built-in openai agent", () => {
  it("runs a tool loop against a local server and completes on the model's own status line", async () => {
    const s = await startFakeOpenAi([
      { tool_calls: [{ name: "write_file", arguments: { path: "src/b.ts", content: "export const b = 2;\n" } }] },
      { content: "Added src/b.ts.\nSTATUS: COMPLETE" },
    ]);
    servers.push(s);
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline(s.base), "src/a.ts": "export const a = 1;\n" });
    git(dir, "init", "-q");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    expect(s.requests()[0]!.body.messages[1]!.content).toBe("Add src/b.ts.");
    const ev = events(dir);
    expect(ev.find((e) => e.type === "phase.started")).toMatchObject({ command: `openai-compatible ${s.base}/chat/completions model qwen-test` });
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" }, tokens: 30, changes: ["src/b.ts"] });
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
    expect(readFileSync(join(runDir(dir), "phases/0001-execute/stdout.log"), "utf8")).toContain("→ write_file src/b.ts");
    expect(JSON.parse(readFileSync(join(runDir(dir), "run.json"), "utf8")).agents).toEqual({ local: `openai-compatible: ${s.base}` });
  });

  it("treats a server that is down as a transient failure: retried, then failed", async () => {
    const s = await startFakeOpenAi([{ content: "x" }]);
    const base = s.base;
    s.stop();
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline(base) });
    const r = cli(["run", "p.yaml", "--reporter", "json"], dir);
    const ev = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(ev.filter((e) => e.type === "phase.finished").map((e) => [e.status, e.error]).slice(0, 2)).toEqual([["failed", "transient"], ["failed", "transient"]]);
    expect(ev.find((e) => e.type === "phase.retry")).toMatchObject({ phase: "execute", attempt: 2, error: "transient" });
    expect(r.code).not.toBe(0);
  });

  it("fails a phase whose model was refused a call, unless the tool set says on_violation: warn", async () => {
    const script = [
      { tool_calls: [{ name: "write_file", arguments: { path: "README.md", content: "x" } }] },
      { tool_calls: [{ name: "write_file", arguments: { path: "src/b.ts", content: "b" } }] },
      { content: "STATUS: COMPLETE" },
    ];
    for (const [policy, expected] of [["fail", "failed"], ["warn", "succeeded"]] as const) {
      const s = await startFakeOpenAi(script);
      servers.push(s);
      const dir = tempDir();
      write(dir, { "p.yaml": pipeline(s.base).replace('bash: ["echo *"] }', `bash: ["echo *"], on_violation: ${policy} }`).replace("max_attempts: 2", "max_attempts: 1") });
      cli(["run", "p.yaml", "--reporter", "plain", "--max-iterations", "1"], dir);
      const ev = events(dir);
      // a phase that broke its tool set decides nothing: its outputs are not read
      expect(ev.find((e) => e.type === "phase.finished"), policy).toMatchObject({ status: expected, output: policy === "fail" ? {} : { status: "COMPLETE" } });
      if (policy === "fail") expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ error: "policy_violation", message: expect.stringContaining("write_file README.md") });
      else expect(ev).toContainEqual(expect.objectContaining({ type: "note", level: "warning", message: expect.stringContaining("(on_violation: warn)") }));
      expect(readFileSync(join(dir, "src/b.ts"), "utf8")).toBe("b");
    }
  });

  it("shows the request it would make in a dry run", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline("http://127.0.0.1:9/v1") });
    const r = cli(["run", "p.yaml", "--dry-run"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("execute: built-in agent: POST http://127.0.0.1:9/v1/chat/completions, model qwen-test, tools: read_file, list_files, write_file, run_command");
  });
});
