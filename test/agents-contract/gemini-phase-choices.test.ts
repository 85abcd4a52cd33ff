/**
 * What a phase brings to the real, pinned Gemini CLI: the model of its tier in the request
 * the API receives (its URL names the model), and a session continued with `--resume ID`
 * (the API sees the earlier turns), also after a run killed in the middle of it is resumed.
 * Gemini CLI has no flag for a schema: a phase's schema is checked afterwards only.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliAsync, events, runDir } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { geminiEnv } from "./agent-envs.ts";
import { contractSandbox, contractSuite, gitWorkdir, runPipeline } from "./contract-helpers.ts";
import { startGeminiMock, type GeminiTurn } from "./gemini-mock.ts";
import { skipped } from "../skip-reason.ts";

const bin = agentBinDir("@google/gemini-cli");
const track = contractSuite();

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
  const { top, dir } = gitWorkdir("phaseloop-gemini-choices-", { "p.yaml": PIPELINE, "src/a.ts": "export const a = 1;\n" }, { beside: true });
  return { dir, env: (url) => geminiEnv(bin, url, { home: join(top, "home") }) };
}

const said = (r: { body: Record<string, unknown> } | undefined) => JSON.stringify(r?.body.contents ?? []);
const PLAN: GeminiTurn = { text: "PLAN-ANSWER: one, two." };

describe.skipIf(skipped(!bin, "the gemini CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("Gemini CLI: model, session", { timeout: 180_000 }, () => {
  it("asks the tier's model, and continues the session in build with the earlier turns", async () => {
    const mock = track(await startGeminiMock([PLAN, { text: "built" }]));
    const { dir, env } = setup();
    const r = await runPipeline(dir, env(mock.url));
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
    const mock = track(await startGeminiMock([PLAN, { hangMs: 60_000 }, { text: "built" }]));
    const { dir, env } = setup();
    const e = env(mock.url);
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain", ...contractSandbox()], dir, e);
    for (let i = 0; i < 900 && !mock.requests.some((q) => said(q).includes("BUILD-PROMPT")); i++) await new Promise((r) => setTimeout(r, 100));
    run.child.kill("SIGKILL");
    await run.done;
    const resumed = await cliAsync(["resume", "--reporter", "plain", ...contractSandbox()], dir, e).done;
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const last = mock.requests.at(-1);
    expect(said(last)).toContain("PLAN-ANSWER");
    expect(said(last)).toContain("BUILD-PROMPT");
  });
});
