/**
 * Codex's contract: phaseloop drives the real, pinned `codex` through its
 * CLI, in a temporary git workdir, against a loopback OpenAI Responses API
 * that each test scripts turn by turn. The model provider is the user's own
 * configuration (a private CODEX_HOME's config.toml naming the mock, with
 * the provider's retries off), kept outside the temp dir: codex refuses to
 * set up its sandbox helper under it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliAsync, ensureBuilt, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { finishedPhase, processesOf, processesRunning } from "./contract-helpers.ts";
import { codexConfigFor, startResponsesMock, type ResponsesMock, type ResponsesTurn } from "./responses-mock.ts";

const CODEX_VERSION = (JSON.parse(readFileSync(join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "versions.json"), "utf8")) as Record<string, { version: string }>)["@openai/codex"]!.version;
const bin = agentBinDir("@openai/codex");

const mocks: ResponsesMock[] = [];
beforeAll(() => ensureBuilt(), 120_000);
afterAll(async () => {
  for (const m of mocks) await m.close();
});

interface Setup {
  tools?: string;
  phase?: string;
  files?: Record<string, string>;
  /** More of the user's own ~/.codex/config.toml, after the provider. */
  userConfig?: string;
  /** The user's own execpolicy rules (~/.codex/rules/default.rules). */
  userRules?: string;
}

function pipeline(s: Setup): string {
  return `phaseloop: 1
name: contract
sandbox: off
agents:
  codex: { preset: codex, model: gpt-5.5 }
${s.tools ? `tools:\n  t: ${s.tools}\n` : ""}phases:
  work:
    agent: codex
${s.tools ? "    tools: t\n" : ""}    prompt: "Do the task."
    retry: { max_attempts: 1 }
${s.phase ?? "    timeout: 2m\n"}    output:
      status: { match: 'STATUS: (\\w+)' }
    next:
      - stop: complete
stop: { max_iterations: 1 }
`;
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  finished: Record<string, unknown>;
  dir: string;
  mock: ResponsesMock;
  ms: number;
  leftovers: number[];
}

/** Codex homes live below the real home's cache, not the temp dir. */
function codexHome(): string {
  const base = join(homedir(), ".cache/phaseloop-agents/codex-homes");
  mkdirSync(base, { recursive: true });
  return mkdtempSync(join(base, "home-"));
}

async function run(turns: ResponsesTurn[] | ((dir: string) => ResponsesTurn[]), s: Setup = {}): Promise<Outcome> {
  const dir = join(tempDir("phaseloop-codex-"), "work");
  mkdirSync(dir);
  const mock = await startResponsesMock(typeof turns === "function" ? turns(dir) : turns);
  mocks.push(mock);
  const home = codexHome();
  writeFileSync(join(home, "config.toml"), codexConfigFor(mock.url, s.userConfig));
  if (s.userRules) {
    mkdirSync(join(home, "rules"));
    writeFileSync(join(home, "rules/default.rules"), s.userRules);
  }
  write(dir, { "p.yaml": pipeline(s), "src/a.ts": "export const a = 1;\n", ...(s.files ?? {}) });
  git(dir, "init", "-q");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "start");
  const env = { PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: join(dir, ".."), CODEX_HOME: home, MOCK_API_KEY: "sk-test" };
  const started = Date.now();
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  const ms = Date.now() - started;
  const { finished, runId } = finishedPhase(dir);
  return { ...r, finished, dir, mock, ms, leftovers: processesOf(runId) };
}

const say = (text: string): ResponsesTurn => ({ text });
const done = say("Finished.\nSTATUS: COMPLETE");
const exec = (cmd: string): ResponsesTurn => ({ call: "exec_command", args: { cmd } });
const addFile = (path: string, content = "x"): ResponsesTurn => ({ custom: "apply_patch", input: `*** Begin Patch\n*** Add File: ${path}\n+${content}\n*** End Patch\n` });
const stdoutLog = (dir: string) => readFileSync(join(runDir(dir), "phases/0001-work/stdout.log"), "utf8");

describe.skipIf(!bin)(`Codex CLI ${CODEX_VERSION} through phaseloop`, { timeout: 150_000 }, () => {
  it("succeeds: a patch inside its tool set, human lines, the version recorded", async () => {
    const o = await run([addFile("src/b.ts", "export const b = 2;"), done], { tools: '{ read: ["**"], write: ["src/**"] }' });
    expect(o.finished, `${o.stdout}\n${o.stderr}\n${JSON.stringify(o.mock.requests[0]?.tools)?.slice(0, 3000)}\n${stdoutLog(o.dir)}`).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" }, changes: ["src/b.ts"] });
    expect(readFileSync(join(o.dir, "src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    expect(o.stdout).toContain("→ edit");
    expect(o.stdout).not.toContain('{"type":');
    expect(JSON.parse(readFileSync(join(runDir(o.dir), "run.json"), "utf8")).agents.codex).toContain(CODEX_VERSION);
    expect(o.mock.requests[0]).toMatchObject({ model: "gpt-5.5" });
    expect(o.leftovers).toEqual([]);
  });

  it("a patch outside the write globs is a policy_violation naming the path", async () => {
    const o = await run([addFile("NOTES.md"), done], { tools: '{ read: ["**"], write: ["src/**"] }' });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain("NOTES.md");
  });

  it("a patch outside the workdir is refused by codex and fails the phase as a policy_violation", async () => {
    const o = await run((d) => [addFile(`${d}/../patched-outside.txt`), done], { tools: '{ read: ["**"], write: ["src/**"] }' });
    expect(existsSync(join(o.dir, "../patched-outside.txt"))).toBe(false);
    // codex says so only on stderr, without the path
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain("patch rejected: writing outside of the project");
  });

  it('bash: ["npm test"] runs it; another command is a policy_violation naming it', async () => {
    const files = { "package.json": JSON.stringify({ name: "x", version: "1.0.0", scripts: { test: "echo TESTS-RAN-$((6*7))" } }) };
    const ok = await run([exec("npm test"), done], { tools: '{ read: ["**"], write: ["src/**"], bash: ["npm test"] }', files });
    expect(ok.finished, ok.stdout + ok.stderr).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" } });
    expect(stdoutLog(ok.dir)).toContain("TESTS-RAN-42");
    expect(ok.stdout).toContain("→ $");
    const other = await run([exec("touch src/made-by-codex.ts"), done], { tools: '{ read: ["**"], write: ["src/**"], bash: ["npm test"] }', files });
    expect(other.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(other.finished.message)).toContain("touch src/made-by-codex.ts");
  });

  it("a read-only tool set runs codex in its read-only sandbox: a command cannot write", async () => {
    const o = await run([exec("touch src/ro.ts"), done], { tools: '{ read: ["**"], bash: ["touch *"] }' });
    expect(existsSync(join(o.dir, "src/ro.ts"))).toBe(false);
  });

  it("the user's ~/.codex config and rules, and the repository's .codex, do not widen the sandbox", async () => {
    const userConfig = 'sandbox_mode = "danger-full-access"\napproval_policy = "never"\n[sandbox_workspace_write]\nwritable_roots = ["/"]\nnetwork_access = true\n';
    const files = { ".codex/config.toml": 'sandbox_mode = "danger-full-access"\n[sandbox_workspace_write]\nwritable_roots = ["/"]\n' };
    const o = await run((d) => [exec(`touch ${d}/../widened-codex`), done], { tools: '{ read: ["**"], write: ["src/**"], bash: ["touch *"] }', userConfig, files, userRules: 'prefix_rule(pattern=["touch"], decision="allow")\n' });
    expect(existsSync(join(o.dir, "../widened-codex"))).toBe(false);
  });

  for (const [status, body, cls, quote] of [
    [400, { error: { message: "Invalid 'input[0].content': string too long.", type: "invalid_request_error", code: "string_above_max_length" } }, "agent_error", "string too long"],
    [401, { error: { message: "Incorrect API key provided: sk-test.", type: "invalid_request_error", code: "invalid_api_key" } }, "agent_error", "Incorrect API key"],
    [429, { error: { message: "Rate limit reached for gpt-5.5 on tokens per min (TPM).", type: "tokens", code: "rate_limit_exceeded" } }, "transient", ""],
    [500, { error: { message: "The server had an error while processing your request.", type: "server_error" } }, "transient", ""],
  ] as const) {
    it(`HTTP ${status} fails as ${cls}, in codex's words`, async () => {
      const turn = { status, body: JSON.stringify(body) };
      const o = await run([turn, turn, turn, done]);
      expect(o.finished).toMatchObject({ status: "failed", error: cls });
      expect(String(o.finished.message)).toMatch(/^codex: /);
      if (quote) expect(String(o.finished.message)).toContain(quote);
      expect(o.ms).toBeLessThan(60_000);
    });
  }

  it("idle timeout: a command that left the process group is ended with the phase", async () => {
    // codex runs commands in a PID namespace: the escaped sleep is found by its command line
    const o = await run([exec("touch started; setsid sh -c 'exec sleep 3171' > /dev/null 2>&1 < /dev/null &"), { hangMs: 120_000 }], { phase: "    idle_timeout: 8s\n" });
    expect(o.finished).toMatchObject({ status: "failed", error: "idle_timeout" });
    expect(existsSync(join(o.dir, "started"))).toBe(true);
    expect(processesRunning("sleep 3171")).toEqual([]);
    expect(o.leftovers).toEqual([]);
  });
});
