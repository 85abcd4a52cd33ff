// The codex preset against the real Codex CLI (pinned in versions.json),
// talking to a loopback mock of the OpenAI Responses API through a private
// CODEX_HOME whose config.toml names the mock as the model provider.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { startResponsesMock, type ResponsesMock, type ResponsesTurn } from "./responses-mock.ts";

const bin = agentBinDir("@openai/codex");
const suite = bin ? describe : describe.skip;

beforeAll(() => ensureBuilt(), 120_000);

let mock: ResponsesMock | undefined;
afterEach(async () => {
  await mock?.close();
  mock = undefined;
});

const PIPELINE = `phaseloop: 1
name: codex-contract
agents:
  worker: { preset: codex, model: gpt-5 }
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

async function drive(turns: ResponsesTurn[]) {
  mock = await startResponsesMock(turns);
  const top = tempDir("phaseloop-codex-");
  const dir = join(top, "work");
  const home = join(top, "home");
  const codexHome = join(home, ".codex");
  mkdirSync(dir);
  mkdirSync(codexHome, { recursive: true });
  write(dir, { "p.yaml": PIPELINE, "src/a.ts": "export {};\n" });
  writeFileSync(
    join(codexHome, "config.toml"),
    `model_provider = "mock"\n[model_providers.mock]\nname = "mock"\nbase_url = "${mock.url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n`,
  );
  git(dir, "init", "-q");
  const env = { PATH: `${bin}:${process.env.PATH}`, HOME: home, CODEX_HOME: codexHome, MOCK_API_KEY: "sk-test" };
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env).done;
  return { r, dir, ev: events(dir) };
}

suite("codex preset against the real Codex CLI", () => {
  it("completes when the model answers, with its text and the CLI's version recorded", async () => {
    const { r, ev, dir } = await drive([{ text: "All done. STATUS: COMPLETE" }]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const info = JSON.parse(readFileSync(join(runDir(dir), "run.json"), "utf8")) as { agents: Record<string, string> };
    expect(info.agents.worker).toContain("0.169.0");
    expect(ev.find((e) => e.type === "phase.finished")).toMatchObject({ status: "succeeded", error: null });
    expect(mock!.requests.at(-1)).toMatchObject({ model: "gpt-5" });
  }, 120_000);

  it("a 401 fails the phase with the API's own explanation", async () => {
    const { r, ev } = await drive([{ status: 401, body: JSON.stringify({ error: { message: "Invalid API key provided", type: "invalid_request_error", code: "invalid_api_key" } }) }]);
    expect(r.code).not.toBe(0);
    const finished = ev.find((e) => e.type === "phase.finished") as { status: string; message?: string } | undefined;
    expect(finished).toMatchObject({ status: "failed", error: "agent_error" });
    expect(finished?.message).toContain("Invalid API key provided");
  }, 120_000);
});
