/**
 * The real agent CLIs inside phaseloop's OS sandbox (`sandbox: required`): each reaches its
 * loopback API mock through the sandbox's allowed hosts, and the sandbox stops what the
 * CLI's own rules let through.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/runtime/probe-sandbox.ts";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { startAnthropicMock, type AnthropicMock, type Turn } from "./anthropic-mock.ts";
import { startGeminiMock, type GeminiMock, type GeminiTurn } from "./gemini-mock.ts";
import { codexConfigFor, startResponsesMock, type ResponsesMock } from "./responses-mock.ts";

const sandbox = probeSandbox().available;
const claudeBin = agentBinDir("@anthropic-ai/claude-code");
const geminiBin = agentBinDir("@google/gemini-cli");
const codexBin = agentBinDir("@openai/codex");
const closers: (() => Promise<void>)[] = [];
beforeAll(() => ensureBuilt(), 120_000);
afterAll(async () => {
  for (const close of closers) await close();
});

/** A git workdir beside a fake HOME that holds a dotfile and a planted secret. */
function world(pipeline: string) {
  const top = tempDir("phaseloop-sbx-cli-");
  const dir = join(top, "work");
  const home = join(top, "home");
  mkdirSync(join(home, ".aws"), { recursive: true });
  mkdirSync(dir);
  writeFileSync(join(home, ".bashrc"), "original\n");
  writeFileSync(join(home, ".aws", "credentials"), "PLANTED-AWS-KEY\n");
  write(dir, { "p.yaml": pipeline, "src/a.ts": "export const a = 1;\n" });
  git(dir, "init", "-q");
  return { dir, home };
}

const claudePipeline = (tools: string) => `phaseloop: 1
name: sandboxed-claude
sandbox: required
agents:
  claude: { preset: claude, model: claude-sonnet-4-5 }
tools:
  t: ${tools}
phases:
  work:
    agent: claude
    tools: t
    prompt: Do the task.
    retry: { max_attempts: 1 }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;

async function claude(turns: Turn[] | ((dir: string, home: string) => Turn[]), tools: string) {
  const { dir, home } = world(claudePipeline(tools));
  const mock: AnthropicMock = await startAnthropicMock(typeof turns === "function" ? turns(dir, home) : turns);
  closers.push(() => mock.close());
  const env = {
    PATH: `${claudeBin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    HOME: home,
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: "sk-ant-phaseloop-test",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
  };
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  const ev = events(dir);
  return { r, dir, home, mock, ev, finished: ev.find((e) => e.type === "phase.finished") ?? {} };
}

const tool = (name: string, input: Record<string, unknown>): Turn => ({ blocks: [{ tool: name, input }] });
const say = (text: string): Turn => ({ blocks: [{ text }] });

describe.skipIf(!sandbox || claudeBin === undefined)("Claude Code in the OS sandbox", { timeout: 120_000 }, () => {
  it("reaches its API through the sandbox and writes inside its tool set", async () => {
    const o = await claude((d) => [tool("Write", { file_path: `${d}/src/b.ts`, content: "export const b = 2;\n" }), say("Done.")], '{ read: ["**"], write: ["src/**"] }');
    expect(o.finished, o.r.stdout).toMatchObject({ status: "succeeded" });
    expect(readFileSync(join(o.dir, "src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    expect(o.mock.requests.length).toBe(2);
    expect(o.ev.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
    expect(JSON.parse(readFileSync(join(runDir(o.dir), "run.json"), "utf8")).sandbox).toMatchObject({ available: true, phases: { work: "on" } });
  });

  it("a command claude's allowlist lets through cannot write the home directory or read its secrets", async () => {
    const script = "require('fs').appendFileSync(process.env.HOME+'/.bashrc','evil'); console.log(require('fs').readFileSync(process.env.HOME+'/.aws/credentials','utf8'))";
    const o = await claude([tool("Bash", { command: `node -e "${script}"`, description: "run" }), say("Done.")], '{ read: ["**"], write: ["src/**"], bash: ["node *"] }');
    expect(readFileSync(join(o.home, ".bashrc"), "utf8")).toBe("original\n");
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain(`${o.home}/.bashrc`);
    // the secret never reached the model
    expect(JSON.stringify(o.mock.requests)).not.toContain("PLANTED-AWS-KEY");
  });
});

async function gemini(turns: GeminiTurn[], tools: string, files: Record<string, string> = {}) {
  const mock: GeminiMock = await startGeminiMock(turns);
  closers.push(() => mock.close());
  const { dir, home } = world(`phaseloop: 1
name: sandboxed-gemini
sandbox: required
agents:
  worker: { preset: gemini, model: gemini-2.5-flash }
tools:
  build: ${tools}
phases:
  work: { agent: worker, tools: build, prompt: Do the task., timeout: 2m, retry: { max_attempts: 1 }, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`);
  write(dir, files);
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini/settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
  const env = { PATH: `${geminiBin}:${process.env.PATH}`, HOME: home, GOOGLE_GEMINI_BASE_URL: mock.url, GEMINI_API_KEY: "test-key", GEMINI_CLI_TRUST_WORKSPACE: "true" };
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  const ev = events(dir);
  return { r, dir, home, mock, finished: ev.find((e) => e.type === "phase.finished") ?? {} };
}

describe.skipIf(!sandbox || geminiBin === undefined)("Gemini CLI in the OS sandbox", { timeout: 120_000 }, () => {
  it("a command gemini's allowlist lets through cannot write the home directory or read its secrets", async () => {
    const script = "const fs = require('fs');\nfs.appendFileSync(process.env.HOME + '/.bashrc', 'evil');\nconsole.log(fs.readFileSync(process.env.HOME + '/.aws/credentials', 'utf8'));\n";
    const o = await gemini([{ call: "run_shell_command", args: { command: "node tools/task.js", description: "run" } }, { text: "Done." }], '{ read: ["**"], write: ["src/**"], bash: ["node tools/task.js"] }', { "tools/task.js": script });
    expect(o.mock.requests.length, o.r.stdout + o.r.stderr).toBeGreaterThan(1);
    expect(readFileSync(join(o.home, ".bashrc"), "utf8")).toBe("original\n");
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain(`${o.home}/.bashrc`);
    expect(JSON.stringify(o.mock.requests)).not.toContain("PLANTED-AWS-KEY");
  });

  it("reaches its API through the sandbox and completes", async () => {
    const { r, dir, home, mock } = await gemini([{ text: "All done." }], '{ read: ["**"], write: ["src/**"] }');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(mock.requests.length).toBeGreaterThan(0);
    expect(events(dir).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
    expect(existsSync(join(home, ".bashrc"))).toBe(true);
  });
});

describe.skipIf(!sandbox || codexBin === undefined)("Codex in the OS sandbox", { timeout: 120_000 }, () => {
  it("reaches the model provider its config.toml names through the sandbox, and completes", async () => {
    const mock: ResponsesMock = await startResponsesMock([{ text: "All done." }]);
    closers.push(() => mock.close());
    const { dir, home } = world(`phaseloop: 1
name: sandboxed-codex
sandbox: required
agents:
  worker: { preset: codex, model: gpt-5 }
tools:
  build: { read: ["**"], write: ["src/**"] }
phases:
  work: { agent: worker, tools: build, prompt: Do the task., timeout: 2m, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`);
    const codexHome = join(home, ".codex");
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(join(codexHome, "config.toml"), codexConfigFor(mock.url));
    const env = { PATH: `${codexBin}:${process.env.PATH}`, HOME: home, CODEX_HOME: codexHome, MOCK_API_KEY: "sk-test" };
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(mock.requests.length).toBeGreaterThan(0);
    expect(events(dir).find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
  });
});
