/**
 * What a phase brings to the real, pinned Claude Code: the model of its tier in the request
 * the API receives, a session continued (the API sees the earlier turns), the run's
 * artifacts folder writable in the OS sandbox, and a run killed in the middle of a
 * continued session that continues it when resumed.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliAsync, events, runDir } from "../cli/cli-helpers.ts";
import { agentBinDir } from "./agent-bins.ts";
import { claudeEnv } from "./agent-envs.ts";
import { startAnthropicMock, type Turn } from "./anthropic-mock.ts";
import { contractSandbox, contractSuite, gitWorkdir, runPipeline } from "./contract-helpers.ts";
import { skipped } from "../skip-reason.ts";

const bin = agentBinDir("@anthropic-ai/claude-code");
const track = contractSuite();

const PIPELINE = `phaseloop: 1
name: choices
agents:
  claude: { preset: claude, model: claude-sonnet-4-5, models: { small: claude-haiku-4-5, large: claude-opus-4-8 } }
tools:
  t: { read: ["**"], write: ["src/**"] }
phases:
  plan: { agent: claude, tools: t, model: small, prompt: "PLAN-PROMPT: make a plan.", retry: { max_attempts: 1 } }
  build:
    agent: claude
    tools: t
    model: large
    session: continue
    prompt: "BUILD-PROMPT: write the notes to {{ run.artifacts }}/notes.md"
    retry: { max_attempts: 1 }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;

const say = (text: string): Turn => ({ blocks: [{ text }] });

/** The text of every message of a request, flattened. */
const said = (body: Record<string, unknown>) => JSON.stringify(body.messages ?? []);

describe.skipIf(skipped(bin === undefined, "the claude CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("Claude Code: model, session, artifacts", { timeout: 180_000 }, () => {
  it("sends the tier's model, continues the session with the earlier turns, writes the artifacts folder", async () => {
    const { dir } = gitWorkdir("phaseloop-claude-choices-", { "p.yaml": PIPELINE, "src/a.ts": "export const a = 1;\n" }, { commit: false });
    const mock = await startAnthropicMock((i) => (i === 0 ? say("PLAN-ANSWER: three steps.") : i === 1 ? { blocks: [{ tool: "Write", input: { file_path: `${runDir(dir)}/artifacts/notes.md`, content: "notes\n" } }] } : say("done")));
    track(mock);
    const r = await runPipeline(dir, claudeEnv(bin, mock.url));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(mock.requests[0]!.model).toBe("claude-haiku-4-5");
    expect(mock.requests[1]!.model).toBe("claude-opus-4-8");
    // the second phase's request carries the first phase's prompt and answer: the same session
    expect(said(mock.requests[0]!)).not.toContain("BUILD-PROMPT");
    expect(said(mock.requests[1]!)).toContain("PLAN-PROMPT");
    expect(said(mock.requests[1]!)).toContain("PLAN-ANSWER");
    expect(said(mock.requests[1]!)).toContain("BUILD-PROMPT");
    const started = events(dir).filter((e) => e.type === "phase.started");
    const planOut = JSON.parse(readFileSync(join(runDir(dir), "phases/0001-plan/output.json"), "utf8"));
    expect(typeof planOut.session_id).toBe("string");
    expect(started.map((e) => [e.model, e.continued_session])).toEqual([["claude-haiku-4-5", null], ["claude-opus-4-8", planOut.session_id]]);
    expect(readFileSync(join(runDir(dir), "artifacts/notes.md"), "utf8")).toBe("notes\n");
    expect(existsSync(join(dir, "notes.md"))).toBe(false);
  });

  it("--dry-run shows the argv the run starts Claude Code with, its model in the request the API receives", async () => {
    const { dir } = gitWorkdir("phaseloop-claude-dry-run-", { "p.yaml": PIPELINE, "src/a.ts": "export const a = 1;\n" }, { commit: false });
    const mock = await startAnthropicMock((i) => (i === 0 ? say("PLAN-ANSWER: three steps.") : say("done")));
    track(mock);
    const env = claudeEnv(bin, mock.url);
    const dry = await cliAsync(["run", "p.yaml", "--dry-run", "--json", ...contractSandbox()], dir, env).done;
    expect(dry.code, dry.stderr).toBe(0);
    const plan = JSON.parse(dry.stdout) as { phases: { phase: string; command: string[]; env: string[]; sandbox: { state: string } }[] };
    const r = await runPipeline(dir, env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const runId = events(dir)[0]!.run as string;
    const normal = (argv: unknown) => (argv as string[]).map((a) => a.replaceAll(runId, "RUN_ID").replace(/\/phases\/\d{4}-/g, "/phases/NNNN-"));
    const started = events(dir).filter((e) => e.type === "phase.started");
    // the first phase exactly; the second continues the first's session, which no dry run can know
    expect(normal(started[0]!.command)).toEqual(normal(plan.phases[0]!.command));
    expect(normal(started[1]!.command).filter((a) => !a.startsWith("--resume="))).toEqual(normal(plan.phases[1]!.command));
    expect(plan.phases[0]!.command).toContain("--model=claude-haiku-4-5");
    expect(mock.requests[0]!.model).toBe("claude-haiku-4-5");
    expect(plan.phases.map((p) => started.find((e) => e.phase === p.phase)!.sandbox)).toEqual(plan.phases.map((p) => p.sandbox.state === "on"));
  });

  it("a run killed while a continued session runs continues that session when resumed", async () => {
    const { dir } = gitWorkdir("phaseloop-claude-resume-", { "p.yaml": PIPELINE.replace('prompt: "BUILD-PROMPT: write the notes to {{ run.artifacts }}/notes.md"', 'prompt: "BUILD-PROMPT: build it."'), "src/a.ts": "export const a = 1;\n" }, { commit: false });
    let run: ReturnType<typeof cliAsync> | undefined;
    let killed = false;
    const mock = await startAnthropicMock((i, body) => {
      if (i === 0) return say("PLAN-ANSWER: three steps.");
      if (!killed && said(body).includes("BUILD-PROMPT")) {
        killed = true;
        run?.child.kill("SIGKILL");
        return { hangMs: 30_000 };
      }
      return say("built.");
    });
    track(mock);
    const env = claudeEnv(bin, mock.url);
    run = cliAsync(["run", "p.yaml", "--reporter", "plain", ...contractSandbox()], dir, env);
    const first = await run.done;
    expect(killed, first.stdout + first.stderr).toBe(true);
    const resumed = await cliAsync(["resume", "--reporter", "plain", ...contractSandbox()], dir, env).done;
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    const last = mock.requests.at(-1)!;
    expect(said(last)).toContain("PLAN-ANSWER");
    expect(said(last)).toContain("BUILD-PROMPT");
    const planOut = JSON.parse(readFileSync(join(runDir(dir), "phases/0001-plan/output.json"), "utf8"));
    const restarted = events(dir).filter((e) => e.type === "phase.started" && e.phase === "build");
    expect(restarted.at(-1)!.continued_session).toBe(planOut.session_id);
  });
});
