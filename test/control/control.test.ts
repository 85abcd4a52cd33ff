import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { answerQuestion, ControlError, getRun, listRuns, readRunLog, resumeRun, startRun, stopRun, validatePipeline, waitForRun } from "../../src/control/index.ts";
import { ASK, ENV, ensureBuilt, eventTypes, QUICK, refusal, repo, runJson, SLOW, tempDir, write } from "./control-helpers.ts";

beforeAll(() => ensureBuilt(), 180_000);

describe("the control layer starts runs in processes of their own", () => {
  it("returns the run id at once, records who started it, and the run goes on to its end", async () => {
    const dir = repo({ "loops/quick.yaml": QUICK });
    const started = await startRun({ workdir: dir, pipeline: "loops/quick.yaml", params: { word: "it's; rm -rf x", count: 3 }, via: "mcp", env: ENV });
    expect(started.runId).toMatch(/^\d{8}-\d{6}-[a-z0-9]{4}$/);
    expect(existsSync(join(dir, ".phaseloop/runs", started.runId, "run.json"))).toBe(true);
    expect(runJson(dir, started.runId)).toMatchObject({ started_via: "mcp", params: { word: "it's; rm -rf x", count: 3 } });
    const waited = await waitForRun(dir, started.runId, { timeoutMs: 30_000 });
    expect(waited.end).toBe("finished");
    expect(waited.status).toMatchObject({ state: "complete", outcome: { outcome: "complete", exit_code: 0 } });
    // the param went through the shell quoting of templates: one word, not a command
    expect(readFileSync(join(dir, "said.txt"), "utf8")).toBe("it's; rm -rf x 3");
    const runs = await listRuns(dir);
    expect(runs.map((r) => [r.run, r.outcome])).toEqual([[started.runId, "complete"]]);
    expect(existsSync(started.output)).toBe(true);
  }, 60_000);

  it("a run started from the command line is recorded as started_via cli; older run.json without it still reads", async () => {
    const { cli } = await import("../cli/cli-helpers.ts");
    const dir = repo({ "quick.yaml": QUICK });
    expect(cli(["run", "quick.yaml", "--reporter", "plain"], dir).code).toBe(0);
    const [entry] = await listRuns(dir);
    expect(runJson(dir, entry!.run).started_via).toBe("cli");
    const info = runJson(dir, entry!.run);
    delete info.started_via;
    write(dir, { [`.phaseloop/runs/${entry!.run}/run.json`]: JSON.stringify(info, null, 2) });
    expect((await getRun(dir, entry!.run)).state).toBe("complete");
    expect(cli(["resume", entry!.run], dir).code).toBe(0); // a finished run: its exit code stands
  }, 60_000);

  it("run.started says how the run was started, so a run.json that resume --force rebuilds from the log keeps started_via", async () => {
    const { cli, events } = await import("../cli/cli-helpers.ts");
    const dir = repo({ "short.yaml": SLOW.replaceAll("iteration >= 40", "iteration >= 3").replace("max_iterations: 40", "max_iterations: 3") });
    const { runId } = await startRun({ workdir: dir, pipeline: "short.yaml", params: {}, via: "mcp", env: ENV });
    await waitForRun(dir, runId, { timeoutMs: 600 });
    expect((await stopRun(dir, runId)).status.state).toBe("interrupted");
    expect(events(dir).find((e) => e.type === "run.started")).toMatchObject({ started_via: "mcp" });
    write(dir, { [`.phaseloop/runs/${runId}/run.json`]: "{ torn" });
    const r = cli(["resume", runId, "--force"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(existsSync(join(dir, ".phaseloop/runs", runId, "run.json.damaged"))).toBe(true);
    expect(runJson(dir, runId)).toMatchObject({ started_via: "mcp", params: { note: "none" } });
  }, 60_000);

  it("refuses an invalid pipeline with its diagnostics, unknown params, and a busy workdir, before anything starts", async () => {
    const dir = repo({ "bad.yaml": "phaseloop: 1\nname: Bad Name\nphases: {}\n", "quick.yaml": QUICK, "slow.yaml": SLOW });
    const bad = await refusal(startRun({ workdir: dir, pipeline: "bad.yaml", via: "mcp", env: ENV }));
    expect(bad.code).toBe("PIPELINE_INVALID");
    expect(bad.diagnostics?.length).toBeGreaterThan(0);
    expect(bad.diagnostics![0]).toMatchObject({ file: join(dir, "bad.yaml"), line: expect.any(Number), column: expect.any(Number) });
    const param = await refusal(startRun({ workdir: dir, pipeline: "quick.yaml", params: { wrod: "x" }, via: "mcp", env: ENV }));
    expect(param.code).toBe("PIPELINE_INVALID");
    expect(param.diagnostics![0]!.hint).toContain("word");
    const typed = await refusal(startRun({ workdir: dir, pipeline: "quick.yaml", params: { count: "many" }, via: "mcp", env: ENV }));
    expect(typed.code).toBe("PIPELINE_INVALID");
    expect((await refusal(startRun({ workdir: dir, pipeline: "quick.yaml", params: { word: { nested: 1 } as never }, via: "mcp", env: ENV }))).code).toBe("BAD_ARGUMENT");
    expect((await refusal(startRun({ workdir: dir, pipeline: "quick.yaml", maxIterations: 0, via: "mcp", env: ENV }))).code).toBe("BAD_ARGUMENT");
    expect(existsSync(join(dir, ".phaseloop/runs"))).toBe(false);

    const slow = await startRun({ workdir: dir, pipeline: "slow.yaml", via: "ui", env: ENV });
    const busy = await refusal(startRun({ workdir: dir, pipeline: "quick.yaml", via: "mcp", env: ENV }));
    expect(busy.code).toBe("WORKDIR_BUSY");
    expect(busy.message).toContain(slow.runId);
    await stopRun(dir, slow.runId);
  }, 60_000);

  it("refuses paths outside the workdir: absolute, through .., through a symbolic link", async () => {
    const outside = tempDir("phaseloop-outside-");
    write(outside, { "evil.yaml": QUICK });
    const dir = repo({ "quick.yaml": QUICK });
    symlinkSync(join(outside, "evil.yaml"), join(dir, "link.yaml"));
    symlinkSync(outside, join(dir, "linked-dir"));
    for (const path of [join(outside, "evil.yaml"), "../" + outside.split("/").pop() + "/evil.yaml", "sub/../../evil.yaml", "link.yaml", "linked-dir/evil.yaml", "/etc/passwd"]) {
      const e = await refusal(startRun({ workdir: dir, pipeline: path, via: "mcp", env: ENV }));
      expect(e.code, path).toBe("PATH_OUTSIDE_WORKDIR");
      const v = await refusal(validatePipeline(dir, { path }));
      expect(v.code, path).toBe("PATH_OUTSIDE_WORKDIR");
    }
    expect((await refusal(startRun({ workdir: dir, pipeline: "missing.yaml", via: "mcp", env: ENV }))).code).toBe("PATH_NOT_FOUND");
    expect((await refusal(startRun({ workdir: join(dir, "nope"), pipeline: "quick.yaml", via: "mcp", env: ENV }))).code).toBe("WORKDIR_INVALID");
    // text that names a prompt outside the workdir cannot read it
    const text = QUICK.replace(/phases:[\s\S]*stop:/, `agents:\n  a: { command: [cat], prompt_via: stdin }\nphases:\n  say:\n    agent: a\n    prompt: ${join(outside, "evil.yaml")}\nstop:`);
    const checked = await validatePipeline(dir, { text });
    expect(checked.valid).toBe(false);
    expect(JSON.stringify(checked.diagnostics)).toContain("outside the workdir");
  }, 60_000);

  it("stops a run as Ctrl-C does (state saved, exit 130, resumable), then resumes it", async () => {
    const dir = repo({ "slow.yaml": SLOW });
    const { runId } = await startRun({ workdir: dir, pipeline: "slow.yaml", params: { note: "a" }, via: "mcp", env: ENV });
    // let it get going
    await waitForRun(dir, runId, { timeoutMs: 1500 });
    const stopped = await stopRun(dir, runId);
    expect(stopped.stopped).toBe(true);
    expect(stopped.status.state).toBe("interrupted");
    expect(stopped.status.resume).toBe(`phaseloop resume ${runId}`);
    expect(eventTypes(dir, runId)).toContain("run.interrupted");
    expect((await refusal(stopRun(dir, runId))).code).toBe("RUN_NOT_RUNNING");
    expect((await refusal(answerQuestion(dir, runId, "yes"))).code).toBe("NOT_AWAITING_ANSWER");

    const resumed = await resumeRun(dir, runId, { env: ENV });
    expect(resumed.runId).toBe(runId);
    expect((await getRun(dir, runId)).state).toBe("running");
    expect((await refusal(resumeRun(dir, runId, { env: ENV }))).code).toBe("RUN_RUNNING");
    const again = await stopRun(dir, runId);
    expect(again.status.state).toBe("interrupted");
    const types = eventTypes(dir, runId);
    expect(types).toContain("run.resumed");
    expect(types.filter((t) => t === "run.interrupted").length).toBe(2);
  }, 60_000);

  it("answers a question: the run goes on with the answer, as resume --answer", async () => {
    const dir = repo({ "ask.yaml": ASK });
    const { runId } = await startRun({ workdir: dir, pipeline: "ask.yaml", via: "mcp", env: ENV });
    const asked = await waitForRun(dir, runId, { timeoutMs: 30_000 });
    expect(asked.end).toBe("question");
    expect(asked.status.question).toMatchObject({ phase: "approve", question: expect.stringContaining("iteration 1") });
    expect((await refusal(answerQuestion(dir, runId, "  "))).code).toBe("BAD_ARGUMENT");
    await answerQuestion(dir, runId, "--not-an-option; approve", { env: ENV });
    const second = await waitForRun(dir, runId, { timeoutMs: 30_000 });
    expect(second.end).toBe("question"); // not approve: back to plan, asked again
    await answerQuestion(dir, runId, "approve", { env: ENV });
    const done = await waitForRun(dir, runId, { timeoutMs: 30_000 });
    expect(done.end).toBe("finished");
    expect(done.status.outcome).toMatchObject({ outcome: "complete" });
    expect(readFileSync(join(dir, "built.txt"), "utf8")).toBe("approve");
    expect((await refusal(resumeRun(dir, runId, { env: ENV }))).code).toBe("RUN_FINISHED");
  }, 90_000);

  it("of starts at the same moment one runs; the others are told the workdir is busy", async () => {
    const dir = repo({ "slow.yaml": SLOW });
    const results = await Promise.allSettled([1, 2, 3].map(() => startRun({ workdir: dir, pipeline: "slow.yaml", via: "ui", env: ENV })));
    const started = results.filter((r): r is PromiseFulfilledResult<Awaited<ReturnType<typeof startRun>>> => r.status === "fulfilled");
    expect(started.length).toBe(1);
    for (const r of results) if (r.status === "rejected") expect((r.reason as ControlError).code).toBe("WORKDIR_BUSY");
    expect((await listRuns(dir)).length).toBe(1);
    await stopRun(dir, started[0]!.value.runId);
  }, 60_000);

  it("stops a run started at a terminal, as its Ctrl-C would", async () => {
    const { cliAsync } = await import("../cli/cli-helpers.ts");
    const dir = repo({ "slow.yaml": SLOW });
    const run = cliAsync(["run", "slow.yaml", "--reporter", "plain"], dir);
    let runId = "";
    for (let i = 0; i < 200 && !runId; i++) {
      await new Promise((r) => setTimeout(r, 50));
      runId = (await listRuns(dir))[0]?.run ?? "";
    }
    await waitForRun(dir, runId, { timeoutMs: 800 });
    const stopped = await stopRun(dir, runId);
    expect(stopped).toMatchObject({ stopped: true, status: { state: "interrupted" } });
    const ended = await run.done;
    expect(ended.code).toBe(130);
    expect(ended.stderr).toContain(`resume with: phaseloop resume ${runId}`);
    expect(runJson(dir, runId).started_via).toBe("cli");
  }, 60_000);

  it("knows no run it does not have", async () => {
    const dir = repo({ "quick.yaml": QUICK });
    expect((await refusal(getRun(dir, "20260101-000000-zzzz"))).code).toBe("UNKNOWN_RUN");
    expect((await refusal(readRunLog(dir, "../../etc"))).code).toBe("UNKNOWN_RUN");
    expect((await refusal(stopRun(dir, "x"))).code).toBe("UNKNOWN_RUN");
    expect(await listRuns(dir)).toEqual([]);
  });
});
