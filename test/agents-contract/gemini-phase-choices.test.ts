/**
 * What a phase brings to the real, pinned Gemini CLI: the model of its tier in the request
 * the API receives (its URL names the model), and a session continued with `--resume ID`
 * (the API sees the earlier turns), also after a run killed in the middle of it is resumed.
 * Gemini CLI has no flag for a schema: a phase's schema is checked afterwards only.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliAsync, ensureBuilt, events, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { startGeminiMock, type GeminiMock, type GeminiTurn } from "./gemini-mock.ts";

const bin = agentBinDir("@google/gemini-cli");
const mocks: GeminiMock[] = [];
beforeAll(() => ensureBuilt(), 120_000);
afterAll(async () => {
  for (const m of mocks) await m.close();
});

const PIPELINE = `phaseloop: 1
name: choices
sandbox: off
agents:
  gemini: { preset: gemini, model: gemini-2.5-pro, models: { small: gemini-2.5-flash } }
tools:
  t: { read: ["**"], write: ["src/**"] }
phases:
  plan: { agent: gemini, tools: t, model: small, prompt: "PLAN-PROMPT: list the steps.", retry: { max_attempts: 1 }, timeout: 2m }
  build:
    agent: gemini
    tools: t
    session: continue
    prompt: "BUILD-PROMPT: do the steps."
    retry: { max_attempts: 1 }
    timeout: 2m
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;

function setup(): { dir: string; env: (url: string) => Record<string, string> } {
  const top = tempDir("phaseloop-gemini-choices-");
  const dir = join(top, "work");
  const home = join(top, "home");
  mkdirSync(dir);
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini/settings.json"), JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } } }));
  write(dir, { "p.yaml": PIPELINE, "src/a.ts": "export const a = 1;\n" });
  git(dir, "init", "-q");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "start");
  return { dir, env: (url) => ({ PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: home, GOOGLE_GEMINI_BASE_URL: url, GEMINI_API_KEY: "test-key", NO_COLOR: "1" }) };
}

const said = (r: { body: Record<string, unknown> } | undefined) => JSON.stringify(r?.body.contents ?? []);
const PLAN: GeminiTurn = { text: "PLAN-ANSWER: one, two." };

describe.skipIf(!bin)("Gemini CLI: model, session", { timeout: 180_000 }, () => {
  it("asks the tier's model, and continues the session in build with the earlier turns", async () => {
    const mock = await startGeminiMock([PLAN, { text: "built" }]);
    mocks.push(mock);
    const { dir, env } = setup();
    const r = await cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, env(mock.url)).done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(mock.requests[0]!.url).toContain("/models/gemini-2.5-flash:");
    expect(mock.requests.at(-1)!.url).toContain("/models/gemini-2.5-pro:");
    expect(said(mock.requests[0])).not.toContain("BUILD-PROMPT");
    const last = mock.requests.at(-1);
    expect(said(last)).toContain("PLAN-PROMPT");
    expect(said(last)).toContain("PLAN-ANSWER");
    expect(said(last)).toContain("BUILD-PROMPT");
    const planOut = JSON.parse(readFileSync(join(runDir(dir), "phases/0001-plan/output.json"), "utf8"));
    const build = events(dir).find((e) => e.type === "phase.started" && e.phase === "build")!;
    expect(build.continued_session).toBe(planOut.session_id);
  });

  it("a run killed while the continued session runs continues it when resumed", async () => {
    const mock = await startGeminiMock([PLAN, { hangMs: 60_000 }, { text: "built" }]);
    mocks.push(mock);
    const { dir, env } = setup();
    const e = env(mock.url);
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir, e);
    for (let i = 0; i < 900 && !mock.requests.some((q) => said(q).includes("BUILD-PROMPT")); i++) await new Promise((r) => setTimeout(r, 100));
    run.child.kill("SIGKILL");
    await run.done;
    const resumed = await cliAsync(["resume", "--reporter", "plain"], dir, e).done;
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const last = mock.requests.at(-1);
    expect(said(last)).toContain("PLAN-ANSWER");
    expect(said(last)).toContain("BUILD-PROMPT");
  });
});
