/**
 * What agents do all day, in the OS sandbox under the defaults (`sandbox: auto`): the real
 * CLIs against their loopback mocks create a folder that does not exist yet and files in it,
 * run the project's tests through their shell tool, and write under /tmp, with no refusal.
 * And codex started by a command agent the way the supervisor recipe starts it
 * (`sh -c "codex exec -s workspace-write -"`): phaseloop's fence is its sandbox, so its
 * commands and patches work, and a write outside the fence still fails the phase.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { agentBinDir } from "./agent-bins.ts";
import { claudeEnv, codexEnv, geminiEnv } from "./agent-envs.ts";
import { startAnthropicMock, type Turn } from "./anthropic-mock.ts";
import { contractSuite, gitWorkdir, runPipeline } from "./contract-helpers.ts";
import { startGeminiMock, type GeminiTurn } from "./gemini-mock.ts";
import { startResponsesMock, type ResponsesTurn } from "./responses-mock.ts";

const sandbox = probeSandbox().available;
const claudeBin = agentBinDir("@anthropic-ai/claude-code");
const geminiBin = agentBinDir("@google/gemini-cli");
const codexBin = agentBinDir("@openai/codex");
const track = contractSuite();

/** A project with a test script and a `.gitignore`, no `lib/` yet, beside a fake HOME with a planted secret. */
function world(pipeline: string) {
  const { top, dir } = gitWorkdir("phaseloop-fenced-work-", {
    "p.yaml": pipeline,
    ".gitignore": "node_modules/\n",
    "package.json": JSON.stringify({ name: "proj", version: "1.0.0", scripts: { test: "node --test" } }),
    "test/a.test.js": "require('node:test')('adds', () => { if (1 + 1 !== 2) throw new Error('no'); });\n",
    "tools/scratch.js": "require('fs').writeFileSync('/tmp/fenced-scratch.txt', 'scratch'); console.log(require('fs').readFileSync('/tmp/fenced-scratch.txt', 'utf8'));\n",
  }, { beside: true });
  const home = join(top, "home");
  mkdirSync(join(home, ".ssh"), { recursive: true });
  writeFileSync(join(home, ".bashrc"), "original\n");
  writeFileSync(join(home, ".ssh", "id_rsa"), "PLANTED-SSH-KEY\n");
  return { dir, home };
}

const TOOLS = '{ read: ["**"], write: ["lib/**", "test/**"], bash: ["npm test", "npm test *", "mkdir *", "node tools/*"] }';

const pipeline = (preset: string, model: string) => `phaseloop: 1
name: fenced-${preset}
agents:
  worker: { preset: ${preset}, model: ${model} }
tools:
  build: ${TOOLS}
phases:
  work: { agent: worker, tools: build, prompt: Do the task., timeout: 2m, retry: { max_attempts: 1 }, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;

function expectCleanWork(o: { finished: Record<string, unknown>; events: Record<string, unknown>[]; stdout: string; stderr: string }, dir: string, home: string) {
  expect(o.finished, `${String(o.finished.message)}\n${o.stdout}${o.stderr}`).toMatchObject({ status: "succeeded" });
  expect(o.events.filter((e) => e.type === "sandbox.refused")).toEqual([]);
  expect(o.events.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
  expect(readFileSync(join(dir, "lib/util/sum.js"), "utf8")).toContain("sum");
  expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
  expect(existsSync("/tmp/fenced-scratch.txt")).toBe(false); // the phase's own /tmp
}

describe.skipIf(!sandbox || claudeBin === undefined)("Claude Code does ordinary work in the fence", { timeout: 120_000 }, () => {
  it("creates a folder and a file in it, runs the tests through Bash, writes under /tmp", async () => {
    const { dir, home } = world(pipeline("claude", "claude-sonnet-4-5"));
    const tool = (name: string, input: Record<string, unknown>): Turn => ({ blocks: [{ tool: name, input }] });
    const mock = track(await startAnthropicMock([
      tool("Write", { file_path: `${dir}/lib/util/sum.js`, content: "exports.sum = (a, b) => a + b;\n" }),
      tool("Bash", { command: "npm test", description: "test" }),
      tool("Bash", { command: "node tools/scratch.js", description: "scratch" }),
      { blocks: [{ text: "Done." }] },
    ]));
    const o = await runPipeline(dir, claudeEnv(claudeBin, mock.url, { home }));
    expectCleanWork(o, dir, home);
    expect(JSON.stringify(mock.requests)).toMatch(/pass 1/);
  });
});

describe.skipIf(!sandbox || geminiBin === undefined)("Gemini CLI does ordinary work in the fence", { timeout: 120_000 }, () => {
  it("creates a folder and a file in it, runs the tests through its shell tool, writes under /tmp", async () => {
    const { dir, home } = world(pipeline("gemini", "gemini-2.5-flash"));
    const mock = track(await startGeminiMock([
      { call: "write_file", args: { file_path: `${dir}/lib/util/sum.js`, content: "exports.sum = (a, b) => a + b;\n" } },
      { call: "run_shell_command", args: { command: "npm test", description: "test" } },
      { call: "run_shell_command", args: { command: "node tools/scratch.js", description: "scratch" } },
      { text: "Done." },
    ] as GeminiTurn[]));
    const o = await runPipeline(dir, geminiEnv(geminiBin, mock.url, { home }));
    expectCleanWork(o, dir, home);
    expect(JSON.stringify(mock.requests)).toMatch(/pass 1/);
  });
});

describe.skipIf(!sandbox || codexBin === undefined)("Codex does ordinary work in the fence", { timeout: 120_000 }, () => {
  const turns: ResponsesTurn[] = [
    { custom: "apply_patch", input: "*** Begin Patch\n*** Add File: lib/util/sum.js\n+exports.sum = (a, b) => a + b;\n*** End Patch\n" },
    { call: "exec_command", args: { cmd: "npm test" } },
    { call: "exec_command", args: { cmd: "node tools/scratch.js" } },
    { text: "Done." },
  ];

  it("creates a folder and a file in it, runs the tests through its shell tool, writes under /tmp", async () => {
    const { dir, home } = world(pipeline("codex", "gpt-5.5"));
    const mock = track(await startResponsesMock(turns));
    const o = await runPipeline(dir, codexEnv(codexBin, mock.url, { home }));
    expectCleanWork(o, dir, home);
    expect(JSON.stringify(mock.requests)).toMatch(/pass 1/);
  });

  it("started by a command agent as the supervisor recipe starts it, its commands and patches work in phaseloop's fence", async () => {
    const spec = `phaseloop: 1
name: supervised
agents:
  worker: { command: [sh, -c, "codex exec --skip-git-repo-check -s workspace-write -"], prompt_via: stdin }
tools:
  build: ${TOOLS}
phases:
  work: { agent: worker, tools: build, prompt: Do the task., timeout: 2m, retry: { max_attempts: 1 }, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;
    const { dir, home } = world(spec);
    const mock = track(await startResponsesMock(turns));
    const o = await runPipeline(dir, codexEnv(codexBin, mock.url, { home }));
    expectCleanWork(o, dir, home);
    const sent = JSON.stringify(mock.requests);
    expect(sent).toMatch(/pass 1/);
    expect(sent).not.toMatch(/error building bubblewrap command|Failed to write file/);
  });

  it("started that way and writing outside the fence, the phase fails: codex's own failures are not a success", async () => {
    const spec = `phaseloop: 1
name: supervised
agents:
  worker: { command: [sh, -c, "codex exec --skip-git-repo-check -s workspace-write -"], prompt_via: stdin }
tools:
  build: ${TOOLS}
phases:
  work: { agent: worker, tools: build, prompt: Do the task., timeout: 2m, retry: { max_attempts: 1 }, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;
    const { dir, home } = world(spec);
    const mock = track(await startResponsesMock([{ call: "exec_command", args: { cmd: `echo evil >> ${home}/.bashrc` } }, { text: "Done." }]));
    const o = await runPipeline(dir, codexEnv(codexBin, mock.url, { home }));
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    expect(o.finished, o.stdout + o.stderr).toMatchObject({ status: "failed", error: "policy_violation" });
  });
});
