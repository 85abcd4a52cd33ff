// Paths a model names are bounded, and a phase of the built-in agent hears its timeout and
// Ctrl-C within a second whatever its tools are doing (a `d/` repeated 2,100 times once kept
// phaseloop busy for minutes, with the timeout unable to fire and ~2,000 folders left).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeServer, type ScriptedAnswer } from "../agents/fake-openai.ts";
import { cli, cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);
const servers: FakeServer[] = [];
afterAll(() => servers.forEach((s) => s.stop()));

const pipeline = (base: string, timeout: string) => `phaseloop: 1
name: bounds
agents:
  local: { preset: openai, model: qwen-test, base_url: "${base}" }
tools:
  build: { read: ["**"], write: ["**"] }
phases:
  execute:
    agent: local
    tools: build
    prompt: Write the file.
    timeout: ${timeout}
    retry: { max_attempts: 1 }
    next:
      - if: exit_code == 0
        stop: complete
      - goto: execute
stop: { max_iterations: 1 }
`;

async function project(script: ScriptedAnswer[], timeout: string): Promise<{ dir: string; server: FakeServer }> {
  const server = await startFakeOpenAi(script);
  servers.push(server);
  const dir = tempDir();
  write(dir, { "p.yaml": pipeline(server.base, timeout), ".gitignore": "node_modules/\n", "README.md": "# a project\n" });
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "start");
  return { dir, server };
}

const deep = `${"d/".repeat(2100)}x.txt`;
const phaseMs = (dir: string) => {
  const finished = events(dir).find((e) => e.type === "phase.finished") as { duration_ms?: number } | undefined;
  return { finished, durationMs: finished?.duration_ms };
};

describe("the built-in agent's paths are bounded", () => {
  it("refuses a path 2,100 directories deep at once, makes no folder, and the phase timeout still fires on time", async () => {
    const { dir, server } = await project([{ tool_calls: [{ name: "write_file", arguments: { path: deep, content: "x" } }] }, { hang: true }], "2s");
    const t = Date.now();
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    const wall = Date.now() - t;
    expect(existsSync(join(dir, "d")), "no folder is left behind").toBe(false);
    const log = readFileSync(join(runDir(dir), "phases/0001-execute/stdout.log"), "utf8");
    expect(log).toContain("refused: the path is");
    // the refusal went back to the model, which then hung: the 2 s timeout ended the phase
    expect(server.requests()[1]!.body.messages.at(-1)!.content).toMatch(/^refused: the path is \d+ bytes long; at most 4096/);
    const { finished, durationMs } = phaseMs(dir);
    expect(finished).toMatchObject({ status: "failed", error: "timeout" });
    expect(durationMs!).toBeLessThan(3000);
    expect(wall).toBeLessThan(15_000);
    expect(r.code).not.toBe(0);
  }, 30_000);

  it("refuses a path deeper than 64 directories but within 4096 bytes, and a name longer than 255 bytes", async () => {
    const { dir, server } = await project(
      [
        { tool_calls: [{ name: "write_file", arguments: { path: `${"d/".repeat(65)}x.txt`, content: "x" } }, { name: "write_file", arguments: { path: `${"n".repeat(256)}.txt`, content: "x" } }, { name: "write_file", arguments: { path: `${"d/".repeat(63)}ok.txt`, content: "ok" } }] },
        { content: "done" },
      ],
      "30s",
    );
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    const answers = server.requests()[1]!.body.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(answers[0]).toMatch(/more than 64 directories deep/);
    expect(answers[1]).toMatch(/longer than 255 bytes/);
    expect(answers[2]).toMatch(/^wrote d\/(d\/){62}ok\.txt/);
    expect(readFileSync(join(dir, `${"d/".repeat(63)}ok.txt`), "utf8")).toBe("ok");
    // the refused deep path left no folder beyond the one the allowed write made
    let depth = 0;
    for (let p = dir; existsSync(join(p, "d")); p = join(p, "d")) depth++;
    expect(depth).toBe(63);
    expect(r.code).not.toBe(0); // a refused call fails the phase (on_violation: fail)
  }, 30_000);

  it("hears Ctrl-C within a second while the agent's tools are busy", async () => {
    // one answer of 4,000 calls, each a refused deep path or a real write: seconds of tool work
    const calls = Array.from({ length: 4000 }, (_, i) => (i % 2 ? { name: "write_file", arguments: { path: deep, content: "x" } } : { name: "write_file", arguments: { path: `out/f${i}.txt`, content: "x".repeat(1000) } }));
    // (not streamed: the first answer refuses streaming; a stream of 2,000 deep paths in
    // 9-byte fragments takes the loopback server itself many seconds to send)
    const { dir } = await project([{ rejectStream: true }, { tool_calls: calls }, { content: "done" }], "10m");
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    // wait until the tools are at work: their first file is written
    for (let i = 0; i < 1200 && !(existsSync(join(dir, "out")) && readdirSync(join(dir, "out")).length > 20); i++) await new Promise((r) => setTimeout(r, 25));
    expect(readdirSync(join(dir, "out")).length).toBeGreaterThan(20);
    const sent = Date.now();
    process.kill(run.child.pid!, "SIGINT");
    const r = await run.done;
    const latency = Date.now() - sent;
    expect(r.code).toBe(130);
    expect(readdirSync(join(dir, "out")).length, "the tools stopped before the end of the answer").toBeLessThan(2000);
    expect(latency).toBeLessThan(1000);
    console.log(`Ctrl-C honoured in ${latency} ms`);
  }, 60_000);

  it("ends a phase at its timeout within a second while the agent's tools are busy", async () => {
    // 60,000 small writes: seconds of tool work on any machine, most of it after the 1 s timeout
    const tooDeep = `${"d/".repeat(65)}x.txt`;
    const calls = Array.from({ length: 60_000 }, (_, i) => ({ name: "write_file", arguments: { path: i % 2 ? tooDeep : `out/f${i}.txt`, content: "x" } }));
    const { dir } = await project([{ rejectStream: true }, { tool_calls: calls }, { content: "done" }], "1s");
    cli(["run", "p.yaml", "--reporter", "plain"], dir);
    const { finished, durationMs } = phaseMs(dir);
    const written = existsSync(join(dir, "out")) ? readdirSync(join(dir, "out")).length : 0;
    expect(finished, `${written} of 30,000 files written in ${durationMs} ms`).toMatchObject({ status: "failed", error: "timeout" });
    expect(written, "the tools were at work when the timeout came").toBeGreaterThan(0);
    expect(written, "the tools stopped before the end of the answer").toBeLessThan(30_000);
    expect(durationMs!).toBeLessThan(2000);
    console.log(`a 1 s timeout ended the phase after ${durationMs} ms, ${written} of 30,000 files written`);
  }, 60_000);
});
