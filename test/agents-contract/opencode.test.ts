/**
 * opencode's contract: phaseloop drives the real, pinned `opencode` through
 * its CLI, in a temporary git workdir (with a .gitignore, under the default
 * `sandbox: auto`), against a loopback OpenAI-compatible chat-completions API
 * that each test scripts turn by turn. The agent names the API with
 * `base_url`; the key is OPENAI_API_KEY. The HOME is private.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { runDir } from "../cli/cli-helpers.ts";
import { agentBinDir, pinnedVersion } from "./agent-bins.ts";
import type { ChatTurn } from "./chat-completions-mock.ts";
import { chatContract } from "./chat-contract.ts";
import { leftBehind, stdoutLog } from "./contract-helpers.ts";
import { skipped } from "../skip-reason.ts";

const OPENCODE_VERSION = pinnedVersion("opencode-ai");
const bin = agentBinDir("opencode-ai");
const sandbox = probeSandbox().available;
const run = chatContract("opencode", bin, ".config/opencode/opencode.json");

const say = (text: string): ChatTurn => ({ text });
const done = say("Finished.\nSTATUS: COMPLETE");
const writeFile = (filePath: string, content = "x\n"): ChatTurn => ({ call: "write", args: { filePath, content } });
const readFile = (filePath: string): ChatTurn => ({ call: "read", args: { filePath } });
const bash = (command: string): ChatTurn => ({ call: "bash", args: { command, description: "run it" } });
const PKG = { "package.json": JSON.stringify({ name: "x", version: "1.0.0", scripts: { test: "echo TESTS-RAN-$((6*7))", build: "touch built" } }) };

describe.skipIf(skipped(!bin, "the opencode CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))(`opencode ${OPENCODE_VERSION} through phaseloop`, { timeout: 200_000 }, () => {
  it("succeeds: a file in a new folder inside its tool set, tokens counted, human lines, the version recorded", async () => {
    const o = await run((d) => [{ ...writeFile(`${d}/src/new/b.ts`, "export const b = 2;\n"), text: "I will create src/new/b.ts." }, done], { tools: '{ read: ["**"], write: ["src/**"] }' });
    expect(o.finished, `${o.stdout}\n${o.stderr}`).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" }, changes: ["src/new/b.ts"] });
    expect(readFileSync(join(o.dir, "src/new/b.ts"), "utf8")).toBe("export const b = 2;\n");
    // two steps of the mock's 100 + 20 tokens (the title request is not the session's)
    expect(o.finished.tokens).toBe(240);
    expect(o.stdout).toContain("→ write");
    expect(o.stdout).not.toContain('{"type":');
    expect(JSON.parse(readFileSync(join(runDir(o.dir), "run.json"), "utf8")).agents.opencode).toContain(OPENCODE_VERSION);
    expect(o.mock.requests[0]!.body).toMatchObject({ model: "mock-model", stream: true });
    expect(o.mock.requests[0]!.headers.authorization).toBe("Bearer sk-test");
    // the tool set is what the model is offered: no web, no subagents
    expect(o.mock.offered(0)).toContain("write");
    expect(o.mock.offered(0)).not.toContain("webfetch");
    expect(o.mock.offered(0)).not.toContain("task");
    expect(o.leftovers).toEqual([]);
  });

  it("a write outside the write globs is refused by opencode and is a policy_violation naming the path", async () => {
    const o = await run((d) => [writeFile(`${d}/NOTES.md`), done], { tools: '{ read: ["**"], write: ["src/**"] }' });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain("NOTES.md");
    expect(existsSync(join(o.dir, "NOTES.md"))).toBe(false);
  });

  it("a read outside the read globs is a policy_violation naming the path", async () => {
    const o = await run((d) => [readFile(`${d}/.env`), done], { tools: '{ read: ["src/**"] }', files: { ".env": "SECRET=1\n" } });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain(".env");
    expect(JSON.stringify(o.mock.requests)).not.toContain("SECRET=1");
  });

  it('bash: ["npm test"] runs exactly that command and refuses others, chained ones too', async () => {
    const ok = await run([bash("npm test"), done], { tools: '{ read: ["**"], bash: ["npm test"] }', files: PKG });
    expect(ok.finished, `${ok.stdout}\n${ok.stderr}`).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" } });
    expect(stdoutLog(ok.dir)).toContain("TESTS-RAN-42");
    expect(ok.stdout).toContain("→ $ npm test");

    const other = await run([bash("npm run build"), done], { tools: '{ read: ["**"], bash: ["npm test"] }', files: PKG });
    expect(other.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(other.finished.message)).toContain("npm run build");
    expect(existsSync(join(other.dir, "built"))).toBe(false);

    const chained = await run([bash("npm test && touch chained"), done], { tools: '{ read: ["**"], bash: ["npm test"] }', files: PKG });
    expect(chained.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(existsSync(join(chained.dir, "chained"))).toBe(false);
  });

  it("the repository's opencode.json and the user's own permissions do not widen the tool set", async () => {
    const widen = { permission: { bash: "allow", edit: "allow", external_directory: "allow" } };
    const o = await run((d) => [bash(`touch ${d}/../widened`), writeFile(`${d}/README.md`), done], { tools: '{ read: ["**"], write: ["src/**"], bash: ["echo *"] }', files: { "opencode.json": JSON.stringify(widen) }, userConfig: widen });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(existsSync(join(o.dir, "../widened"))).toBe(false);
    expect(existsSync(join(o.dir, "README.md"))).toBe(false);
  });

  it("a rule of the user's own config for a command phaseloop's rules do not name lets it run in opencode; the check afterwards fails the phase", async () => {
    const o = await run([bash("touch user-widened"), done], { tools: '{ read: ["**"], bash: ["echo *"] }', userConfig: { permission: { bash: { "*": "allow", "touch *": "allow" } } } });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain("touch user-widened");
    // opencode let it run (the user's rule outlived the preset's: the last rule that matches wins)
    expect(stdoutLog(o.dir)).not.toContain("rule which prevents");
  });

  for (const [status, message, cls, headers] of [
    [400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 250000 tokens.", "agent_error", undefined],
    [401, "Incorrect API key provided: sk-test.", "agent_error", undefined],
    [429, "Rate limit reached for mock-model on tokens per min (TPM).", "transient", { "retry-after-ms": "200" }],
    [500, "The server had an error while processing your request.", "transient", undefined],
  ] as const) {
    it(`HTTP ${status} fails as ${cls}, quoting the API`, async () => {
      const turn: ChatTurn = { status, message, ...(headers ? { headers } : {}) };
      const o = await run(Array.from({ length: 12 }, () => turn));
      expect(o.finished).toMatchObject({ status: "failed", error: cls });
      expect(String(o.finished.message)).toMatch(/^opencode: /);
      expect(String(o.finished.message)).toContain(message.slice(0, 30));
      // opencode retries a 429 or a 5xx itself (a lasting 500: six requests over about 76 s)
      expect(o.ms).toBeLessThan(150_000);
      expect(o.leftovers).toEqual([]);
    });
  }

  it("idle timeout: a command that left the process group is ended with the phase, nothing left behind", async () => {
    const o = await run([bash("setsid sh -c 'echo $$ > escaped.pid; exec sleep 3407' > /dev/null 2>&1 < /dev/null &"), { hangMs: 150_000 }], { phase: "    idle_timeout: 20s\n" });
    expect(o.finished).toMatchObject({ status: "failed", error: "idle_timeout" });
    expect(leftBehind(o, o.dir, "escaped.pid", "sleep 3407")).toBe(false);
    expect(o.leftovers).toEqual([]);
    expect(o.ms).toBeLessThan(100_000);
  });

  it("structured output: a json output with a schema is read from opencode's text, beside match and tag outputs", async () => {
    const output = [
      "      verdict: { json: true, required: true, schema: { type: object, properties: { verdict: { type: string } }, required: [verdict], additionalProperties: false } }",
      "      status: { match: 'STATUS: (\\w+)', required: true }",
      "      reason: { tag: reason, required: true }",
    ].join("\n");
    const o = await run([say('Checked it.\n```json\n{"verdict": "pass"}\n```\n<reason>the tests pass</reason>\nSTATUS: COMPLETE')], { tools: '{ read: ["**"] }', output });
    expect(o.finished, `${o.stdout}\n${o.stderr}`).toMatchObject({ status: "succeeded", output: { verdict: { verdict: "pass" }, status: "COMPLETE", reason: "the tests pass" } });
    const bad = await run([say('```json\n{"verdict": 3}\n```')], { tools: '{ read: ["**"] }', output: "      verdict: { json: true, required: true, schema: { type: object, properties: { verdict: { type: string } }, required: [verdict] } }" });
    expect(bad.finished).toMatchObject({ status: "failed", error: "output_invalid" });
  });

  it("without a tool set, writes and runs commands headless inside the workdir", async () => {
    const o = await run((d) => [writeFile(`${d}/docs/new.md`), bash("echo ok > ran.txt"), done]);
    expect(o.finished, o.stdout + o.stderr).toMatchObject({ status: "succeeded" });
    expect(readFileSync(join(o.dir, "docs/new.md"), "utf8")).toBe("x\n");
    expect(readFileSync(join(o.dir, "ran.txt"), "utf8")).toBe("ok\n");
  });

  it.skipIf(!sandbox)("inside the OS sandbox (sandbox: auto): reaches its API, and a command its rules let through cannot write the home directory or read its secrets", async () => {
    const script = "const fs = require('fs');\ntry { console.log(fs.readFileSync(process.env.HOME + '/.aws/credentials', 'utf8')); } catch (e) { console.log(String(e)); }\nfs.appendFileSync(process.env.HOME + '/.bashrc', 'evil');\n";
    const o = await run([bash("node tools/task.js"), done], { tools: '{ read: ["**"], write: ["src/**"], bash: ["node tools/task.js"] }', files: { "tools/task.js": script }, homeFiles: { ".bashrc": "original\n", ".aws/credentials": "PLANTED-AWS-KEY\n" } });
    expect(o.events.find((e) => e.type === "phase.started"), o.stdout + o.stderr).toMatchObject({ sandbox: true });
    expect(o.mock.requests.length).toBeGreaterThan(1);
    expect(readFileSync(join(o.home, ".bashrc"), "utf8")).toBe("original\n");
    expect(JSON.stringify(o.mock.requests)).not.toContain("PLANTED-AWS-KEY");
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain(`${o.home}/.bashrc`);
  });
});
