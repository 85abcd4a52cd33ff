/**
 * The real agent CLIs inside phaseloop's OS sandbox (`sandbox: required`): each reaches its
 * loopback API mock through the sandbox's allowed hosts, and the sandbox stops what the
 * CLI's own rules let through: a command its allowlist or sandbox runs writes `~/.bashrc`
 * and sends `~/.aws/credentials` to the model.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { runDir } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { claudeEnv, codexEnv, geminiEnv } from "./agent-envs.ts";
import { startAnthropicMock, type Turn } from "./anthropic-mock.ts";
import { contractSuite, gitWorkdir, runPipeline, stdoutLog } from "./contract-helpers.ts";
import { startGeminiMock, type GeminiTurn } from "./gemini-mock.ts";
import { startResponsesMock, type ResponsesTurn } from "./responses-mock.ts";
import { skipped } from "../skip-reason.ts";

const sandbox = probeSandbox().available;
const claudeBin = agentBinDir("@anthropic-ai/claude-code");
const geminiBin = agentBinDir("@google/gemini-cli");
const codexBin = agentBinDir("@openai/codex");
const track = contractSuite();

/** A git workdir beside a fake HOME that holds a dotfile and a planted secret. */
function world(pipeline: string, files: Record<string, string> = {}) {
  const { top, dir } = gitWorkdir("phaseloop-sbx-cli-", { "p.yaml": pipeline, "src/a.ts": "export const a = 1;\n", ...files }, { beside: true, commit: false });
  const home = join(top, "home");
  mkdirSync(join(home, ".aws"), { recursive: true });
  writeFileSync(join(home, ".bashrc"), "original\n");
  writeFileSync(join(home, ".aws", "credentials"), "PLANTED-AWS-KEY\n");
  return { dir, home };
}

/** A one-phase pipeline for `preset`, `sandbox: required` unless `mode` says otherwise. */
const pipeline = (preset: string, model: string, tools: string, mode = "required") => `phaseloop: 1
name: sandboxed-${preset}
sandbox: ${mode}
agents:
  worker: { preset: ${preset}, model: ${model} }
tools:
  build: ${tools}
phases:
  work: { agent: worker, tools: build, prompt: Do the task., timeout: 2m, retry: { max_attempts: 1 }, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;

/** Reads the planted secret (printing it, or its error), then appends to ~/.bashrc. */
const TASK_JS = "const fs = require('fs');\ntry { console.log(fs.readFileSync(process.env.HOME + '/.aws/credentials', 'utf8')); } catch (e) { console.log(String(e)); }\nfs.appendFileSync(process.env.HOME + '/.bashrc', 'evil');\n";
const TASK_TOOLS = '{ read: ["**"], write: ["src/**"], bash: ["node tools/task.js"] }';

async function claude(turns: Turn[] | ((dir: string, home: string) => Turn[]), tools: string) {
  const { dir, home } = world(pipeline("claude", "claude-sonnet-4-5", tools));
  const mock = track(await startAnthropicMock(typeof turns === "function" ? turns(dir, home) : turns));
  const o = await runPipeline(dir, claudeEnv(claudeBin, mock.url, { home }));
  return { ...o, dir, home, mock };
}

const tool = (name: string, input: Record<string, unknown>): Turn => ({ blocks: [{ tool: name, input }] });
const say = (text: string): Turn => ({ blocks: [{ text }] });

describe.skipIf(skipped(!sandbox || claudeBin === undefined, "no OS sandbox here, or the claude CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("Claude Code in the OS sandbox", { timeout: 120_000 }, () => {
  it("reaches its API through the sandbox and writes inside its tool set", async () => {
    const o = await claude((d) => [tool("Write", { file_path: `${d}/src/b.ts`, content: "export const b = 2;\n" }), say("Done.")], '{ read: ["**"], write: ["src/**"] }');
    expect(o.finished, o.stdout).toMatchObject({ status: "succeeded" });
    expect(readFileSync(join(o.dir, "src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    expect(o.mock.requests.length).toBe(2);
    expect(o.events.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
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
  const mock = track(await startGeminiMock(turns));
  const { dir, home } = world(pipeline("gemini", "gemini-2.5-flash", tools), files);
  const o = await runPipeline(dir, geminiEnv(geminiBin, mock.url, { home }));
  return { ...o, dir, home, mock };
}

describe.skipIf(skipped(!sandbox || geminiBin === undefined, "no OS sandbox here, or the gemini CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("Gemini CLI in the OS sandbox", { timeout: 120_000 }, () => {
  it("a command gemini's allowlist lets through cannot write the home directory or read its secrets", async () => {
    const script = "const fs = require('fs');\nfs.appendFileSync(process.env.HOME + '/.bashrc', 'evil');\nconsole.log(fs.readFileSync(process.env.HOME + '/.aws/credentials', 'utf8'));\n";
    const o = await gemini([{ call: "run_shell_command", args: { command: "node tools/task.js", description: "run" } }, { text: "Done." }], TASK_TOOLS, { "tools/task.js": script });
    expect(o.mock.requests.length, o.stdout + o.stderr).toBeGreaterThan(1);
    expect(readFileSync(join(o.home, ".bashrc"), "utf8")).toBe("original\n");
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain(`${o.home}/.bashrc`);
    expect(JSON.stringify(o.mock.requests)).not.toContain("PLANTED-AWS-KEY");
  });

  it("reaches its API through the sandbox and completes", async () => {
    const o = await gemini([{ text: "All done." }], '{ read: ["**"], write: ["src/**"] }');
    expect(o.code, o.stdout + o.stderr).toBe(0);
    expect(o.mock.requests.length).toBeGreaterThan(0);
    expect(o.events.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
    expect(existsSync(join(o.home, ".bashrc"))).toBe(true);
  });
});

/** Codex with the fake HOME; `mode` off runs it on its own rules alone, for comparison. */
async function codex(turns: ResponsesTurn[], tools: string, files: Record<string, string> = {}, mode = "required") {
  const mock = track(await startResponsesMock(turns));
  const { dir, home } = world(pipeline("codex", "gpt-5.5", tools, mode), files);
  const o = await runPipeline(dir, codexEnv(codexBin, mock.url, { home }), ["--sandbox", mode]);
  return { ...o, dir, home, mock };
}

const runTask: ResponsesTurn[] = [{ call: "exec_command", args: { cmd: "node tools/task.js" } }, { text: "All done." }];

describe.skipIf(skipped(!sandbox || codexBin === undefined, "no OS sandbox here, or the codex CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("Codex in the OS sandbox", { timeout: 120_000 }, () => {
  it("reaches the model provider its config.toml names through the sandbox, and completes", async () => {
    const o = await codex([{ text: "All done." }], '{ read: ["**"], write: ["src/**"] }');
    expect(o.code, o.stdout + o.stderr).toBe(0);
    expect(o.mock.requests.length).toBeGreaterThan(0);
    expect(o.events.find((e) => e.type === "phase.started")).toMatchObject({ sandbox: true });
  });

  it("on its own rules, codex runs a command that sends ~/.aws/credentials to the model (its sandbox refuses only the ~/.bashrc write)", async () => {
    const o = await codex(runTask, TASK_TOOLS, { "tools/task.js": TASK_JS }, "off");
    // the command ran: its output, the secret in it, went back to the model (codex's --json showed no command_execution item for it)
    expect(o.finished, o.stdout + o.stderr).toMatchObject({ status: "succeeded" });
    expect(JSON.stringify(o.mock.requests)).toContain("PLANTED-AWS-KEY");
    expect(readFileSync(join(o.home, ".bashrc"), "utf8")).toBe("original\n");
  });

  it("the same command in the OS sandbox cannot write the home directory or read its secrets", async () => {
    const o = await codex(runTask, TASK_TOOLS, { "tools/task.js": TASK_JS });
    // codex ran the command: its own sandbox (bubblewrap) cannot start inside phaseloop's
    expect(stdoutLog(o.dir)).toContain('"type":"command_execution"');
    expect(o.mock.requests.length, o.stdout + o.stderr).toBe(2);
    expect(readFileSync(join(o.home, ".bashrc"), "utf8")).toBe("original\n");
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain(`write ${o.home}/.bashrc`);
    expect(String(o.finished.message)).toContain(`read ${o.home}/.aws`);
    expect(JSON.stringify(o.mock.requests)).not.toContain("PLANTED-AWS-KEY");
  });
});
