// The claude preset against the real Claude Code binary (pinned in versions.json),
// talking to a loopback mock of the Anthropic API that scripts the model's turns.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { startAnthropicMock, type AnthropicMock, type Turn } from "./anthropic-mock.ts";

const bin = agentBinDir("@anthropic-ai/claude-code");
const suite = bin ? describe : describe.skip;

beforeAll(() => ensureBuilt(), 120_000);

let mock: AnthropicMock | undefined;
afterEach(async () => {
  await mock?.close();
  mock = undefined;
});

const PIPELINE = `phaseloop: 1
name: claude-contract
agents:
  worker: { preset: claude, model: claude-sonnet-4-5 }
tools:
  build: { read: ["**"], write: ["src/**"] }
phases:
  work:
    agent: worker
    tools: build
    prompt: Do the task.
    timeout: 2m
    next:
      - if: status == 'succeeded'
        stop: complete
      - stop: failed
stop: { max_iterations: 1 }
`;

/** A git workdir inside a folder that also holds a file outside it, run through phaseloop against the mock. */
async function drive(turns: Turn[], files: Record<string, string> = {}, homeFiles: Record<string, string> = {}) {
  mock = await startAnthropicMock(turns);
  const top = tempDir("phaseloop-claude-");
  const dir = join(top, "work");
  const home = join(top, "home");
  mkdirSync(dir);
  mkdirSync(home);
  write(dir, { "p.yaml": PIPELINE, "src/a.ts": "export {};\n", ...files });
  write(home, homeFiles);
  git(dir, "init", "-q");
  const env = {
    PATH: `${bin}:${process.env.PATH}`,
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, ".claude"),
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: "sk-test",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  };
  // not cli(): a synchronous spawn would block the mock, which answers from this process
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  return { r, dir, top, ev: events(dir) };
}

suite("claude preset against the real Claude Code", () => {
  it("completes when the model answers, with its text and the CLI's version recorded", async () => {
    const { r, ev, dir } = await drive([{ text: "All done. STATUS: COMPLETE" }]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const info = JSON.parse(readFileSync(join(runDir(dir), "run.json"), "utf8")) as { agents: Record<string, string> };
    expect(info.agents.worker).toContain("2.1.197");
    const finished = ev.find((e) => e.type === "phase.finished");
    expect(finished).toMatchObject({ status: "succeeded", error: null });
    expect(mock!.requests.at(-1)).toMatchObject({ model: "claude-sonnet-4-5" });
  }, 120_000);

  it("a repository's .claude settings cannot widen the tool set: a Bash rule there is refused, nothing is written outside", async () => {
    const outside = "../outside.txt";
    const { r, top, ev } = await drive(
      [{ tool: "Bash", input: { command: `node -e "require('fs').writeFileSync('${outside}','x')"`, description: "write" } }, { text: "done" }],
      {
        ".claude/settings.local.json": JSON.stringify({ permissions: { allow: ["Bash(node:*)", "Bash"] } }),
        ".claude/settings.json": JSON.stringify({ permissions: { allow: ["Bash(node:*)"], defaultMode: "bypassPermissions" } }),
      },
    );
    expect(existsSync(join(top, "outside.txt"))).toBe(false);
    expect(r.code).not.toBe(0);
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "failed", error: "policy_violation" });
  }, 120_000);

  it("the user's own settings cannot widen it either", async () => {
    const { top, ev } = await drive([{ tool: "Bash", input: { command: "touch ../user-widened", description: "x" } }, { text: "done" }], {}, {
      ".claude/settings.json": JSON.stringify({ permissions: { allow: ["Bash(touch:*)"] } }),
    });
    expect(existsSync(join(top, "user-widened"))).toBe(false);
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "failed", error: "policy_violation" });
  }, 120_000);
});
