/**
 * What a phase brings to the real, pinned Codex CLI: the model of its tier and the output
 * schema (`--output-schema`) in the request the Responses API receives, and a session
 * continued with `codex exec resume` (the API sees the earlier turns), also after a run
 * killed in the middle of it is resumed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliAsync, events, runDir } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { codexEnv } from "./agent-envs.ts";
import { contractSandbox, contractSuite, gitWorkdir, runPipeline } from "./contract-helpers.ts";
import { startResponsesMock, type ResponsesMock, type ResponsesTurn } from "./responses-mock.ts";
import { skipped } from "../skip-reason.ts";

const bin = agentBinDir("@openai/codex");
const track = contractSuite();

const PIPELINE = `phaseloop: 1
name: choices
sandbox: off
agents:
  codex: { preset: codex, model: gpt-5.5, models: { small: gpt-5.4 } }
tools:
  t: { read: ["**"], write: ["src/**"] }
phases:
  plan:
    agent: codex
    tools: t
    model: small
    prompt: "PLAN-PROMPT: list the steps."
    retry: { max_attempts: 1 }
    output:
      plan: { json: true, required: true, schema: { type: object, properties: { steps: { type: array, items: { type: string } } }, required: [steps], additionalProperties: false } }
  build:
    agent: codex
    tools: t
    session: { continue: plan }
    prompt: "BUILD-PROMPT: do the steps."
    retry: { max_attempts: 1 }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;

/** A run dir and a codex home naming the mock. */
function setup(mock: ResponsesMock): { dir: string; env: Record<string, string> } {
  const { top, dir } = gitWorkdir("phaseloop-codex-choices-", { "p.yaml": PIPELINE, "src/a.ts": "export const a = 1;\n" }, { beside: true });
  return { dir, env: codexEnv(bin, mock.url, { home: top }) };
}

const said = (body: Record<string, unknown> | undefined) => JSON.stringify(body?.input ?? []);
const PLAN: ResponsesTurn = { text: '{"steps":["PLAN-ANSWER-one","two"]}' };

describe.skipIf(skipped(!bin, "the codex CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("Codex CLI: model, schema, session", { timeout: 180_000 }, () => {
  it("sends the tier's model and the schema, and continues the plan's thread in build", async () => {
    const mock = track(await startResponsesMock([PLAN, { text: "built" }]));
    const { dir, env } = setup(mock);
    const r = await runPipeline(dir, env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(mock.requests[0]).toMatchObject({ model: "gpt-5.4" });
    expect(mock.requests[1]).toMatchObject({ model: "gpt-5.5" });
    // --output-schema reaches the API as the response's text format
    const format = (mock.requests[0]!.text as { format?: { type?: string; schema?: unknown } } | undefined)?.format;
    expect(format?.type).toBe("json_schema");
    expect(JSON.stringify(format?.schema)).toContain('"steps"');
    expect(mock.requests[1]!.text).not.toMatchObject({ format: { type: "json_schema" } });
    // the build phase's request holds the plan phase's turns
    expect(said(mock.requests[0])).not.toContain("BUILD-PROMPT");
    expect(said(mock.requests[1])).toContain("PLAN-PROMPT");
    expect(said(mock.requests[1])).toContain("PLAN-ANSWER-one");
    expect(said(mock.requests[1])).toContain("BUILD-PROMPT");
    const planOut = JSON.parse(readFileSync(join(runDir(dir), "phases/0001-plan/output.json"), "utf8"));
    expect(planOut.output).toEqual({ plan: { steps: ["PLAN-ANSWER-one", "two"] } });
    const build = events(dir).find((e) => e.type === "phase.started" && e.phase === "build")!;
    expect(build.continued_session).toBe(planOut.session_id);
  });

  it("a run killed while the continued thread runs continues it when resumed", async () => {
    const mock = track(await startResponsesMock([PLAN, { hangMs: 60_000 }, { text: "built" }]));
    const { dir, env } = setup(mock);
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain", ...contractSandbox()], dir, env);
    for (let i = 0; i < 600 && mock.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
    expect(mock.requests.length).toBe(2);
    run.child.kill("SIGKILL");
    await run.done;
    const resumed = await cliAsync(["resume", "--reporter", "plain", ...contractSandbox()], dir, env).done;
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const last = mock.requests.at(-1);
    expect(said(last)).toContain("PLAN-ANSWER-one");
    expect(said(last)).toContain("BUILD-PROMPT");
  });
});
