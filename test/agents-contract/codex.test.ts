/**
 * Codex's contract: phaseloop drives the real, pinned `codex` through its
 * CLI, in a temporary git workdir, against a loopback OpenAI Responses API
 * that each test scripts turn by turn. The model provider is the user's own
 * configuration (a private CODEX_HOME's config.toml naming the mock, with
 * the provider's retries off), kept outside the temp dir: codex refuses to
 * set up its sandbox helper under it.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runDir } from "../cli/cli-helpers.ts";
import { agentBinDir, pinnedVersion } from "./agent-bins.ts";
import { codexEnv } from "./agent-envs.ts";
import { contractPipeline, contractSuite, fenced, gitWorkdir, processesRunning, runPipeline, stdoutLog, type PipelineSetup, type RunOutcome } from "./contract-helpers.ts";
import { startResponsesMock, type ResponsesMock, type ResponsesTurn } from "./responses-mock.ts";
import { skipped } from "../skip-reason.ts";

const CODEX_VERSION = pinnedVersion("@openai/codex");
const bin = agentBinDir("@openai/codex");
const track = contractSuite();

interface Setup extends PipelineSetup {
  /** More of the user's own ~/.codex/config.toml, after the provider. */
  userConfig?: string;
  /** The user's own execpolicy rules (~/.codex/rules/default.rules). */
  userRules?: string;
}

const pipeline = (s: Setup) => contractPipeline("codex", "{ preset: codex, model: gpt-5.5 }", { ...s, sandbox: "off", phase: s.phase ?? "    timeout: 2m\n" });

interface Outcome extends RunOutcome {
  dir: string;
  mock: ResponsesMock;
}

async function run(turns: ResponsesTurn[] | ((dir: string) => ResponsesTurn[]), s: Setup = {}): Promise<Outcome> {
  const { top, dir } = gitWorkdir("phaseloop-codex-", { "p.yaml": pipeline(s), "src/a.ts": "export const a = 1;\n", ...(s.files ?? {}) }, { beside: true });
  const mock = track(await startResponsesMock(typeof turns === "function" ? turns(dir) : turns));
  const o = await runPipeline(dir, codexEnv(bin, mock.url, { home: top, userConfig: s.userConfig, userRules: s.userRules }));
  return { ...o, dir, mock };
}

const say = (text: string): ResponsesTurn => ({ text });
const done = say("Finished.\nSTATUS: COMPLETE");
const exec = (cmd: string): ResponsesTurn => ({ call: "exec_command", args: { cmd } });
const addFile = (path: string, content = "x"): ResponsesTurn => ({ custom: "apply_patch", input: `*** Begin Patch\n*** Add File: ${path}\n+${content}\n*** End Patch\n` });

describe.skipIf(skipped(!bin, "the codex CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))(`Codex CLI ${CODEX_VERSION} through phaseloop`, { timeout: 150_000 }, () => {
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

  it("a patch outside the workdir is refused (by codex, or in the OS sandbox by the sandbox) and fails the phase as a policy_violation", async () => {
    const o = await run((d) => [addFile(`${d}/../patched-outside.txt`), done], { tools: '{ read: ["**"], write: ["src/**"] }' });
    expect(existsSync(join(o.dir, "../patched-outside.txt"))).toBe(false);
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    // codex says so only on stderr, without the path; inside the OS sandbox codex's own is off and the sandbox names the path
    expect(String(o.finished.message)).toContain(fenced ? `write ${join(o.dir, "../patched-outside.txt")}` : "patch rejected: writing outside of the project");
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

  it("a read-only tool set: a command cannot write (codex's read-only sandbox, or the OS sandbox)", async () => {
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
