// The gemini preset against the real Gemini CLI (pinned in versions.json),
// talking to a loopback mock of the Gemini API (GOOGLE_GEMINI_BASE_URL, API-key
// auth chosen in a temporary HOME's settings, the workdir trusted by env).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { startGeminiMock, type GeminiMock, type GeminiTurn } from "./gemini-mock.ts";

const bin = agentBinDir("@google/gemini-cli");
const suite = bin ? describe : describe.skip;

beforeAll(() => ensureBuilt(), 120_000);

let mock: GeminiMock | undefined;
afterEach(async () => {
  await mock?.close();
  mock = undefined;
});

const PIPELINE = `phaseloop: 1
name: gemini-contract
agents:
  worker: { preset: gemini, model: gemini-2.5-flash }
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

async function drive(turns: GeminiTurn[]) {
  mock = await startGeminiMock(turns);
  const top = tempDir("phaseloop-gemini-");
  const dir = join(top, "work");
  const home = join(top, "home");
  mkdirSync(dir);
  mkdirSync(join(home, ".gemini"), { recursive: true });
  write(dir, { "p.yaml": PIPELINE, "src/a.ts": "export {};\n" });
  // API-key auth: a base URL alone selects gateway auth, which headless Gemini CLI refuses (exit 41)
  writeFileSync(join(home, ".gemini/settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
  git(dir, "init", "-q");
  // the workdir is trusted deliberately: headless Gemini CLI exits 55 in an untrusted folder
  const env = { PATH: `${bin}:${process.env.PATH}`, HOME: home, GOOGLE_GEMINI_BASE_URL: mock.url, GEMINI_API_KEY: "test-key", GEMINI_CLI_TRUST_WORKSPACE: "true" };
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  return { r, dir, ev: events(dir) };
}

suite("gemini preset against the real Gemini CLI", () => {
  it("completes when the model answers, with its text and the CLI's version recorded", async () => {
    const { r, ev, dir } = await drive([{ text: "All done. STATUS: COMPLETE" }]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const info = JSON.parse(readFileSync(join(runDir(dir), "run.json"), "utf8")) as { agents: Record<string, string> };
    expect(info.agents.worker).toContain("0.61.0");
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "succeeded", error: null });
    expect(mock!.requests.at(-1)?.url).toContain("gemini-2.5-flash:streamGenerateContent");
  }, 120_000);

});
