/**
 * Claude Code's contract: phaseloop drives the real, pinned `claude` through
 * its CLI, in a temporary git workdir, against a loopback Anthropic API that
 * each test scripts turn by turn.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runDir } from "../cli/cli-helpers.ts";
import { agentBinDir, pinnedVersion } from "./agent-bins.ts";
import { claudeEnv } from "./agent-envs.ts";
import { startAnthropicMock, type AnthropicMock, type Turn } from "./anthropic-mock.ts";
import { contractPipeline, contractSuite, gitWorkdir, leftBehind, runPipeline, type PipelineSetup, type RunOutcome } from "./contract-helpers.ts";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { skipped } from "../skip-reason.ts";

const CLAUDE_VERSION = pinnedVersion("@anthropic-ai/claude-code");
const bin = agentBinDir("@anthropic-ai/claude-code");
const installed = bin !== undefined;
const track = contractSuite();

interface Setup extends PipelineSetup {
  args?: string[];
  /** The user's own ~/.claude/settings.json. */
  userSettings?: unknown;
}

const pipeline = (s: Setup) => contractPipeline("claude", `{ preset: claude, model: claude-sonnet-4-5${s.args ? `, args: ${JSON.stringify(s.args)}` : ""} }`, s);

interface Outcome extends RunOutcome {
  dir: string;
  mock: AnthropicMock;
}

/** Run the pipeline once against a mock scripted with `turns` ("W" in a path is the workdir). */
async function run(turns: Turn[] | ((dir: string) => Turn[]), s: Setup = {}): Promise<Outcome> {
  const { dir } = gitWorkdir("phaseloop-claude-", { "p.yaml": pipeline(s), "src/a.ts": "export const a = 1;\n", ...(s.files ?? {}) });
  const mock = track(await startAnthropicMock(typeof turns === "function" ? turns(dir) : turns));
  const o = await runPipeline(dir, claudeEnv(bin, mock.url, { userSettings: s.userSettings }));
  return { ...o, dir, mock };
}

const say = (text: string): Turn => ({ blocks: [{ text }] });
const tool = (name: string, input: Record<string, unknown>, text?: string): Turn => ({ blocks: [...(text ? [{ text }] : []), { tool: name, input }] });
const writeFile = (path: string, content = "x\n") => tool("Write", { file_path: path, content });
const bash = (command: string, extra: Record<string, unknown> = {}) => tool("Bash", { command, description: "run", ...extra });
const done = say("Finished.\nSTATUS: COMPLETE");

describe.skipIf(skipped(!installed, "the claude CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))(`Claude Code ${CLAUDE_VERSION} through phaseloop`, { timeout: 120_000 }, () => {
  it("succeeds: writes inside its tool set, shows human lines, records the version, keeps every turn", async () => {
    const o = await run((d) => [writeFile(`${d}/src/b.ts`, "export const b = 2;\n"), done], { tools: '{ read: ["src/**"], write: ["src/**"] }' });
    expect(o.finished).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" }, changes: ["src/b.ts"] });
    expect(readFileSync(join(o.dir, "src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    expect(o.stdout).toContain("→ Write");
    expect(o.stdout).not.toContain('{"type":');
    const rd = runDir(o.dir);
    expect(JSON.parse(readFileSync(join(rd, "run.json"), "utf8")).agents.claude).toContain(CLAUDE_VERSION);
    expect(readFileSync(join(rd, "phases/0001-work/stdout.log"), "utf8")).toContain('"type":"result"');
    expect(o.mock.requests[0]!.tools).toBeDefined();
  });

  it("refuses a write outside the write globs and says which", async () => {
    const o = await run((d) => [writeFile(`${d}/NOTES.md`), done], { tools: '{ read: ["src/**"], write: ["src/**"] }' });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(o.finished.message)).toContain("NOTES.md");
    expect(existsSync(join(o.dir, "NOTES.md"))).toBe(false);
  });

  it("expands braces: both alternatives are writable, nothing else", async () => {
    const o = await run((d) => [writeFile(`${d}/src/a.ts`), writeFile(`${d}/src/b.ts`), done], { tools: '{ read: ["src/**"], write: ["src/{a,b}.ts"] }' });
    expect(o.finished).toMatchObject({ status: "succeeded" });
    const c = await run((d) => [writeFile(`${d}/src/c.ts`), done], { tools: '{ read: ["src/**"], write: ["src/{a,b}.ts"] }' });
    expect(c.finished).toMatchObject({ status: "failed", error: "policy_violation" });
  });

  it("anchors ./ at the workdir: ./NOTES.md does not reach docs/NOTES.md", async () => {
    const ok = await run((d) => [writeFile(`${d}/NOTES.md`), done], { tools: '{ write: ["./NOTES.md"] }' });
    expect(ok.finished).toMatchObject({ status: "succeeded", changes: ["NOTES.md"] });
    const deep = await run((d) => [writeFile(`${d}/docs/NOTES.md`), done], { tools: '{ write: ["./NOTES.md"] }' });
    expect(deep.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(existsSync(join(deep.dir, "docs/NOTES.md"))).toBe(false);
  });

  it("writes nested paths and dotfiles under a ** glob", async () => {
    const o = await run((d) => [writeFile(`${d}/src/deep/er/.hidden`), done], { tools: '{ write: ["src/**"] }' });
    expect(o.finished).toMatchObject({ status: "succeeded", changes: ["src/deep/er/.hidden"] });
  });

  it("a read outside the workdir is refused by claude; one inside but outside the read globs is caught afterwards", async () => {
    const out = await run((d) => [tool("Read", { file_path: `${d}/../outside-${d.split("/").pop()}.txt` }), done], { tools: '{ read: ["src/**"] }' });
    expect(out.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    const inside = await run((d) => [tool("Read", { file_path: `${d}/.env` }), done], { tools: '{ read: ["src/**"] }', files: { ".env": "SECRET=1\n" } });
    expect(inside.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(inside.finished.message)).toContain("read .env");
    const allowed = await run((d) => [tool("Read", { file_path: `${d}/src/a.ts` }), done], { tools: '{ read: ["src/**"] }' });
    expect(allowed.finished).toMatchObject({ status: "succeeded" });
  });

  it("runs an allowed command and refuses another", async () => {
    const ok = await run([bash("echo hello > /dev/null; echo hi"), done], { tools: '{ read: ["**"], bash: ["echo *"] }' });
    expect(ok.finished).toMatchObject({ status: "failed", error: "policy_violation" }); // the redirection is outside `echo *`
    const plain = await run([bash("echo hi"), done], { tools: '{ read: ["**"], bash: ["echo *"] }' });
    expect(plain.finished).toMatchObject({ status: "succeeded" });
    const refused = await run([bash("node -e \"require('fs').writeFileSync('/tmp/phaseloop-contract-node', 'x')\""), done], { tools: '{ read: ["**"], bash: ["echo *"] }' });
    expect(refused.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(String(refused.finished.message)).toContain("node");
  });

  it("repository-local .claude settings and .mcp.json do not widen the tool set", async () => {
    const files = {
      ".claude/settings.local.json": JSON.stringify({ permissions: { allow: ["Bash(node:*)", "Bash", "Edit", "Write"], defaultMode: "bypassPermissions" } }),
      ".claude/settings.json": JSON.stringify({ permissions: { allow: ["Bash(node:*)", "Edit(**)"] } }),
      ".mcp.json": JSON.stringify({ mcpServers: { evil: { command: "node", args: ["-e", "1"] } } }),
    };
    const o = await run((d) => [bash(`node -e "require('fs').writeFileSync('${d}/../widened-${d.split("/").pop()}', 'x')"`), writeFile(`${d}/README.md`), done], { tools: '{ read: ["**"], write: ["src/**"], bash: ["echo *"] }', files });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(existsSync(join(o.dir, `../widened-${o.dir.split("/").pop()}`))).toBe(false);
    expect(existsSync(join(o.dir, "README.md"))).toBe(false);
    expect((o.mock.requests[0]!.tools as { name: string }[]).map((t) => t.name).some((n) => n.startsWith("mcp__evil"))).toBe(false);
  });

  it("the user's own settings do not widen it either", async () => {
    const o = await run((d) => [bash(`touch ${d}/../user-widened-${d.split("/").pop()}`), done], { tools: '{ read: ["**"], bash: ["echo *"] }', userSettings: { permissions: { allow: ["Bash(touch:*)", "Bash"] } } });
    expect(o.finished).toMatchObject({ status: "failed", error: "policy_violation" });
    expect(existsSync(join(o.dir, `../user-widened-${o.dir.split("/").pop()}`))).toBe(false);
  });

  for (const [status, type, message, cls] of [
    [400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum", "agent_error"],
    [401, "authentication_error", "invalid x-api-key", "agent_error"],
    [429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", "transient"],
    [500, "api_error", "Internal server error", "transient"],
    [529, "overloaded_error", "Overloaded", "transient"],
  ] as const) {
    it(`HTTP ${status} fails as ${cls}, in claude's words, without claude's own retries`, async () => {
      const o = await run([{ status, type, message }, { status, type, message }, { status, type, message }, done]);
      expect(o.finished).toMatchObject({ status: "failed", error: cls });
      expect(String(o.finished.message)).toMatch(/^claude: /);
      expect(String(o.finished.message)).toContain(String(status));
      expect(o.mock.requests.length).toBeLessThanOrEqual(2);
      expect(o.ms).toBeLessThan(60_000);
    });
  }

  it("max turns: stops as an agent error even when a tool printed 'status 503'", async () => {
    const o = await run([bash("echo status 503"), bash("echo again"), bash("echo more"), done], { tools: '{ read: ["**"], bash: ["echo *"] }', args: ["--max-turns=2"] });
    expect(o.finished).toMatchObject({ status: "failed", error: "agent_error" });
    expect(String(o.finished.message)).toContain("turn limit");
  });

  // a full tool set (none declared): claude runs the commands as they are

  it("idle timeout: a command that left the process group is ended with the phase", async () => {
    const o = await run([bash("setsid sh -c 'echo $$ > escaped.pid; exec sleep 3301' > /dev/null 2>&1 < /dev/null &"), bash("sleep 1"), { hangMs: 60_000 }], { phase: "    idle_timeout: 4s\n" });
    expect(o.finished).toMatchObject({ status: "failed", error: "idle_timeout" });
    expect(leftBehind(o, o.dir, "escaped.pid", "sleep 3301")).toBe(false);
    expect(o.leftovers).toEqual([]);
    expect(o.ms).toBeLessThan(45_000);
  });

  it("wall timeout: a nohup'd command is ended with the phase", async () => {
    const o = await run([bash("nohup sh -c 'echo $$ > nohup.pid; exec sleep 3302' > /dev/null 2>&1 &"), bash("sleep 20"), done], { phase: "    timeout: 6s\n" });
    expect(o.finished).toMatchObject({ status: "failed", error: "timeout" });
    expect(leftBehind(o, o.dir, "nohup.pid", "sleep 3302")).toBe(false);
    expect(o.leftovers).toEqual([]);
  });

  it("a result followed by a wait on a background task: ended after a short grace, judged and charged by the result", async () => {
    const o = await run([bash("sh -c 'echo $$ > bg.pid; exec sleep 3303'", { run_in_background: true }), say("Started it.\nSTATUS: COMPLETE")]);
    expect(o.finished).toMatchObject({ status: "succeeded", output: { status: "COMPLETE" } });
    expect(o.ms).toBeLessThan(30_000);
    expect(leftBehind(o, o.dir, "bg.pid", "sleep 3303")).toBe(false);
    expect(o.leftovers).toEqual([]);
    expect(Number(o.finished.cost_usd)).toBeGreaterThan(0);
    expect(o.mock.requests.length).toBe(2);
  });

  it("structured output: a json output with a schema is claude's --json-schema answer", async () => {
    const output = "      verdict: { json: true, schema: { type: object, properties: { verdict: { type: string }, score: { type: number } }, required: [verdict] } }";
    const o = await run([tool("StructuredOutput", { verdict: "pass", score: 3 }), say("done")], { tools: '{ read: ["**"] }', output });
    expect(o.finished).toMatchObject({ status: "succeeded", output: { verdict: { verdict: "pass", score: 3 } } });
    expect((o.mock.requests[0]!.tools as { name: string }[]).map((t) => t.name)).toContain("StructuredOutput");
  });

  it("structured output keeps the rest: with --json-schema, the tag and match outputs are read from claude's own text", async () => {
    const output = [
      "      verdict: { json: true, schema: { type: object, properties: { verdict: { type: string } }, required: [verdict] } }",
      "      status: { match: 'STATUS: (\\w+)', required: true }",
      "      reason: { tag: reason, required: true }",
    ].join("\n");
    const o = await run([tool("StructuredOutput", { verdict: "pass" }, "Checked it.\n<reason>the tests pass</reason>\nSTATUS: COMPLETE"), say("Checked it.\n<reason>the tests pass</reason>\nSTATUS: COMPLETE")], { tools: '{ read: ["**"] }', output });
    expect(o.finished).toMatchObject({ status: "succeeded", output: { verdict: { verdict: "pass" }, status: "COMPLETE", reason: "the tests pass" } });
    expect(readFileSync(join(runDir(o.dir), "phases/0001-work/stdout.log"), "utf8")).toContain('"structured_output"');
  });

  it.skipIf(!probeSandbox().available)("writes its verdict into the run's artifacts folder inside the OS sandbox, where the rest of .phaseloop/ is read-only, and the verdict is read", async () => {
    const output = "      review: { file: '{{ run.artifacts }}/review.toml', required: true }";
    const review = async (target: (dir: string, artifacts: string) => string) => {
      const { dir } = gitWorkdir("phaseloop-claude-", { "p.yaml": pipeline({ tools: '{ read: ["**"] }', output }), "src/a.ts": "export const a = 1;\n" });
      // the run folder exists by the time claude asks: the verdict goes where {{ run.artifacts }} names
      const artifacts = () => join(dir, ".phaseloop/runs", readdirSync(join(dir, ".phaseloop/runs"))[0]!, "artifacts");
      const mock = track(await startAnthropicMock((i) => (i === 0 ? tool("Write", { file_path: target(dir, artifacts()), content: 'summary = "ok"\nblocker = "needs a key"\n' }) : say("Reviewed."))));
      return { dir, o: await runPipeline(dir, claudeEnv(bin, mock.url), ["--sandbox", "required"]) };
    };
    const ok = await review((_, artifacts) => join(artifacts, "review.toml"));
    expect(ok.o.finished).toMatchObject({ status: "succeeded", output: { review: { summary: "ok", blocker: "needs a key" } } });
    const elsewhere = await review((dir) => join(dir, ".phaseloop/review.toml"));
    expect(elsewhere.o.finished).toMatchObject({ status: "failed" });
    expect(existsSync(join(elsewhere.dir, ".phaseloop/review.toml"))).toBe(false);
  });

  it("without a tool set, writes headless inside the workdir", async () => {
    const o = await run((d) => [writeFile(`${d}/docs/new.md`), bash("echo ok"), done]);
    expect(o.finished).toMatchObject({ status: "succeeded" });
    expect(readFileSync(join(o.dir, "docs/new.md"), "utf8")).toBe("x\n");
  });
});
