/**
 * The control layer on a host in memory: a run's log read a page at a time,
 * a wait that ends when the run's folder changes or when the fake clock says
 * the time is up, and a start that launches phaseloop as a detached program
 * (recorded by the host) and hands back once its run folder appears.
 */
import { describe, expect, it } from "vitest";
import { getRun, listRuns, readRunLog, resumeRun, startRun, waitForRun, type WaitProgress } from "../../src/control/index.ts";
import { MemoryHost } from "../../src/host/memory-host.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { runPath } from "../../src/runtime/run-store.ts";
import { buildEvents, sampleRun } from "../reporters/synthetic-run.ts";

const W = "/home/user/project";
const DONE = "20261101-120400-ab12";
const RUNNING = "20261101-140000-ef56";
const lines = (events: readonly RunEvent[]): string => events.map((e) => `${JSON.stringify(e)}\n`).join("");
const running = buildEvents([{ type: "run.started", pipeline: "loop", file: "loop.yaml", hash: "h", workdir: W, params: {}, max_iterations: 5, phases: ["tick"], version: "0.1.0" }, { type: "iteration.started", iteration: 1, task: null }] as never, RUNNING, Date.UTC(2026, 10, 1, 14, 0, 0));
const PIPELINE = "phaseloop: 1\nname: loop\nparams:\n  goal: { type: string, default: y }\nphases:\n  tick:\n    run: [make]\n    next:\n      - stop: complete\nstop: { max_iterations: 2 }\n";
const LOCK = JSON.stringify({ pid: 999_999, run_id: RUNNING, host: "another-machine", started_at: "2026-11-01T14:00:00.000Z" });

function workdir(more: Record<string, string> = {}): MemoryHost {
  return new MemoryHost({
    cwd: W,
    now: Date.UTC(2026, 10, 1, 14, 10, 0),
    files: { [`${runPath(W, DONE)}/events.jsonl`]: lines(sampleRun()), [`${runPath(W, RUNNING)}/events.jsonl`]: lines(running), [`${W}/.phaseloop/lock`]: LOCK, ...more },
  });
}

/** Let the host's deferred work (watches, reads) run. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

describe("the control layer on a memory host", () => {
  it("reads a run's log a page at a time, each event once, and a cursor taken at the end picks up what is written later", async () => {
    const host = workdir();
    const all = sampleRun();
    const seen: RunEvent[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await readRunLog(W, DONE, { cursor, limit: 7, host });
      seen.push(...page.events);
      cursor = page.cursor;
      if (!page.more) break;
    }
    expect(seen).toEqual(all);
    expect((await readRunLog(W, DONE, { cursor, host })).events).toEqual([]);
    const extra = { ...all[0]!, seq: 100, type: "note", level: "info", message: "later" } as RunEvent;
    host.files.appendText(`${runPath(W, DONE)}/events.jsonl`, `${JSON.stringify(extra)}\n`);
    expect((await readRunLog(W, DONE, { cursor, host })).events).toEqual([extra]);
    expect((await readRunLog(W, DONE, { phase: "verify", host })).events.map((e) => e.type)).toEqual(["phase.started", "phase.finished", "phase.started", "phase.finished"]);
    await expect(readRunLog(W, DONE, { cursor: "nonsense!", host })).rejects.toMatchObject({ code: "BAD_CURSOR" });
  });

  it("lists and reads runs through the host it is given", async () => {
    const host = workdir();
    expect((await listRuns(W, host)).map((r) => [r.run, r.outcome])).toEqual([
      [RUNNING, "running"],
      [DONE, "complete"],
    ]);
    expect(await getRun(W, "20261101-12", host)).toMatchObject({ run: DONE, state: "complete" });
    await expect(getRun(W, "nope", host)).rejects.toMatchObject({ code: "UNKNOWN_RUN" });
  });

  it("waits for a finished run not at all, and for a running one until the fake clock's timeout, reporting its progress", async () => {
    const host = workdir();
    expect(await waitForRun(W, DONE, { host })).toMatchObject({ run: DONE, end: "finished", status: { state: "complete" } });
    const progress: WaitProgress[] = [];
    const waiting = waitForRun(W, RUNNING, { host, timeoutMs: 60_000, onProgress: (p) => progress.push(p) });
    await settle();
    host.clock.advance(59_000);
    await settle();
    let ended = false;
    void waiting.then(() => (ended = true));
    await settle();
    expect(ended).toBe(false);
    host.clock.advance(1000);
    expect(await waiting).toMatchObject({ end: "timeout", status: { state: "running" } });
    expect(progress[0]).toMatchObject({ run: RUNNING, seq: 2, iteration: 1, message: "iteration 1 started" });
  });

  it("ends a wait when the run's folder changes: the run finishes and lets go of the lock", async () => {
    const host = workdir();
    const waiting = waitForRun(W, RUNNING, { host, timeoutMs: 60_000, checkEveryMs: 3_600_000 });
    await settle();
    const finished = buildEvents([{ type: "run.finished", outcome: "complete", reason: { code: "transition", message: "done" }, exit_code: 0, iterations: 1, tokens: 0, cost_usd: 0, elapsed_ms: 1000 }] as never, RUNNING)[0]!;
    host.files.appendText(`${runPath(W, RUNNING)}/events.jsonl`, `${JSON.stringify({ ...finished, seq: 3 })}\n`);
    host.files.remove(`${W}/.phaseloop/lock`);
    // no time passes: the watch of the run folder brings the end
    expect(await waiting).toMatchObject({ end: "finished", status: { state: "complete", headline: "complete: done" } });
  });

  it("starts a run as a detached phaseloop, handing back once its run folder appears; a busy workdir is refused first", async () => {
    let host!: MemoryHost;
    host = new MemoryHost({
      cwd: W,
      files: { [`${W}/loop.yaml`]: PIPELINE },
      // the started phaseloop writes its run.json a moment later, and goes on running
      detach: async (spec) => {
        const id = spec.command[spec.command.indexOf("--run-id") + 1]!;
        await host.clock.sleep(300);
        host.files.mkdir(runPath(W, id));
        host.files.writeText(`${runPath(W, id)}/run.json`, "{}");
        return new Promise<number | null>(() => undefined);
      },
    });
    const started = await startRun({ workdir: W, pipeline: "loop.yaml", via: "mcp", params: { goal: "x" }, command: ["phaseloop"], host });
    expect(started.runId).toMatch(/^20260101-12000\d-/);
    expect(host.detached).toHaveLength(1);
    const [spec] = host.detached;
    expect(spec!.command).toEqual(["phaseloop", "run", `${W}/loop.yaml`, "--workdir", W, "--run-id", started.runId, "--started-via", "mcp", "--reporter", "plain", "--param=goal=x"]);
    expect(spec).toMatchObject({ cwd: W, logFile: `${W}/.phaseloop/output/${started.runId}.log` });
    expect(spec!.env?.NO_COLOR).toBe("1");
    expect(host.files.readText(`${W}/.phaseloop/.gitignore`)).toBe("*\n");

    host.files.writeText(`${W}/.phaseloop/lock`, JSON.stringify({ pid: 4, run_id: started.runId, host: "another-machine", started_at: "2026-01-01T12:00:00.000Z" }));
    await expect(startRun({ workdir: W, pipeline: "loop.yaml", via: "mcp", command: ["phaseloop"], host })).rejects.toMatchObject({ code: "WORKDIR_BUSY" });
    expect(host.detached).toHaveLength(1);
  });

  it("reports a start that ended at once with what it printed, and refuses to resume a finished run", async () => {
    const host: MemoryHost = new MemoryHost({
      cwd: W,
      files: { [`${W}/loop.yaml`]: PIPELINE, [`${runPath(W, DONE)}/events.jsonl`]: lines(sampleRun()) },
      detach: (spec) => {
        host.files.appendText(spec.logFile!, "phaseloop: cannot start\n");
        return 2;
      },
    });
    await expect(startRun({ workdir: W, pipeline: "loop.yaml", via: "cli", command: ["phaseloop"], host })).rejects.toMatchObject({ code: "START_FAILED", message: expect.stringContaining("(exit 2): phaseloop: cannot start") });
    await expect(resumeRun(W, DONE, { host, command: ["phaseloop"] })).rejects.toMatchObject({ code: "RUN_FINISHED" });
    expect(host.detached).toHaveLength(1);
  });
});
