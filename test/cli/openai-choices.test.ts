/** The built-in openai agent: a phase's model (a tier) in its request, a session continued by its kept messages, a schema as response_format. */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAi, type FakeServer } from "../agents/fake-openai.ts";
import { cli, ensureBuilt, events, git, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);
const servers: FakeServer[] = [];
afterAll(() => servers.forEach((s) => s.stop()));

const pipeline = (base: string) => `phaseloop: 1
name: local-choices
agents:
  local: { preset: openai, model: qwen-big, models: { small: qwen-small }, base_url: "${base}" }
tools:
  reading: { read: ["**"] }
phases:
  plan: { agent: local, tools: reading, model: small, prompt: "PLAN-PROMPT: list the steps." }
  build:
    agent: local
    tools: reading
    session: continue
    prompt: "BUILD-PROMPT: report."
    output:
      report: { json: true, required: true, schema: { type: object, properties: { ok: { type: boolean } }, required: [ok] } }
    next: [{ if: "output.report.ok", stop: complete }, { stop: failed }]
stop: { max_iterations: 1 }
`;

describe("the built-in openai agent", () => {
  it("sends the tier's model, continues the session with its kept messages, and asks for the schema natively", async () => {
    const s = await startFakeOpenAi([{ content: "PLAN-ANSWER: one, two." }, { content: '{"ok": true}' }]);
    servers.push(s);
    const dir = tempDir();
    write(dir, { "p.yaml": pipeline(s.base) });
    git(dir, "init", "-q");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const [plan, build] = s.requests().map((q) => q.body as typeof q.body & { response_format?: { type: string; json_schema: { schema: unknown } } });
    expect(plan!.model).toBe("qwen-small");
    expect(build!.model).toBe("qwen-big");
    expect(build!.messages.map((m) => [m.role, m.content?.slice(0, 12)])).toEqual([["system", expect.any(String)], ["user", "PLAN-PROMPT:"], ["assistant", "PLAN-ANSWER:"], ["user", "BUILD-PROMPT"]]);
    expect(plan!.response_format).toBeUndefined();
    expect(build!.response_format).toMatchObject({ type: "json_schema", json_schema: { schema: { type: "object", required: ["ok"] } } });
    // the sessions are kept in the run folder; the continued one is named in the event
    const planOut = JSON.parse(readFileSync(join(runDir(dir), "phases/0001-plan/output.json"), "utf8"));
    expect(readdirSync(join(runDir(dir), "sessions"))).toContain(`${planOut.session_id}.json`);
    expect(events(dir).find((e) => e.type === "phase.started" && e.phase === "build")!.continued_session).toBe(planOut.session_id);
  });
});
