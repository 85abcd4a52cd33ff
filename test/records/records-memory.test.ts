/**
 * Reading run folders back on a host in memory: `runs`, `status` and `logs`
 * read what the host holds (run.json, events.jsonl, the lock, the
 * checkpoint), and a running run's time and a follower's polling are the
 * fake clock's.
 */
import { describe, expect, it } from "vitest";
import { MemoryHost } from "../../src/host/memory-host.ts";
import { listRuns } from "../../src/records/list-runs.ts";
import { readBreakers } from "../../src/records/read-breakers.ts";
import { followEvents, isRunLive, readEvents, readLock } from "../../src/records/run-log.ts";
import { readRunStatus } from "../../src/records/run-status.ts";
import { selectRun } from "../../src/records/select-run.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { machineName } from "../../src/runtime/run-lock.ts";
import { runPath } from "../../src/runtime/run-store.ts";
import { buildEvents, sampleRun } from "../reporters/synthetic-run.ts";

const W = "/home/user/project";
const DONE = "20261101-120400-ab12";
const CRASHED = "20261101-130000-cd34";
const RUNNING = "20261101-140000-ef56";

const lines = (events: readonly RunEvent[]): string => events.map((e) => `${JSON.stringify(e)}\n`).join("");

function runJson(id: string, startedAt: string): string {
  return JSON.stringify({ run_id: id, pipeline: "execute-review", file: `${W}/pipelines/execute-review.yaml`, hash: "h", version: "0.1.0", params: {}, workdir: W, started_at: startedAt, agents: {}, max_iterations: 5 });
}

/** One finished run, one that crashed in its second iteration, one running on another machine (its lock cannot be checked from here, so it is trusted). */
function workdir(): MemoryHost {
  const done = sampleRun();
  const crashed = buildEvents(sampleRun().slice(0, 18).map(({ v: _v, seq: _s, at: _a, run: _r, ...body }) => body) as never, CRASHED, Date.UTC(2026, 10, 1, 13, 0, 0));
  const running = buildEvents([{ type: "run.started", pipeline: "execute-review", file: "pipelines/execute-review.yaml", hash: "h", workdir: W, params: {}, max_iterations: 5, phases: ["execute"], version: "0.1.0" }, { type: "iteration.started", iteration: 1, task: null }] as never, RUNNING, Date.UTC(2026, 10, 1, 14, 0, 0));
  return new MemoryHost({
    cwd: W,
    now: Date.UTC(2026, 10, 1, 14, 10, 0),
    files: {
      [`${runPath(W, DONE)}/run.json`]: runJson(DONE, "2026-11-01T12:04:00.000Z"),
      [`${runPath(W, DONE)}/events.jsonl`]: lines(done),
      [`${runPath(W, CRASHED)}/run.json`]: runJson(CRASHED, "2026-11-01T13:00:00.000Z"),
      [`${runPath(W, CRASHED)}/events.jsonl`]: lines(crashed),
      [`${runPath(W, CRASHED)}/state.json`]: JSON.stringify({ snapshot: { iteration: 2, tokens: 1200, costUsd: 0.02, elapsedMs: 66000, consecutiveFailures: 1 } }),
      [`${runPath(W, RUNNING)}/run.json`]: runJson(RUNNING, "2026-11-01T14:00:00.000Z"),
      [`${runPath(W, RUNNING)}/events.jsonl`]: lines(running),
      [`${W}/.phaseloop/lock`]: JSON.stringify({ pid: 999_999, run_id: RUNNING, host: "another-machine", started_at: "2026-11-01T14:00:00.000Z" }),
    },
  });
}

describe("records on a memory host", () => {
  it("lists the runs newest first, each as it ended or stands, a running run's time by the host's clock", async () => {
    const host = workdir();
    const runs = await listRuns(W, host);
    expect(runs.map((r) => [r.run, r.outcome, r.exit_code])).toEqual([
      [RUNNING, "running", null],
      [CRASHED, "crashed", 130],
      [DONE, "complete", 0],
    ]);
    expect(runs[0]!.duration_ms).toBe(10 * 60_000);
    host.clock.advance(5000);
    expect((await listRuns(W, host))[0]!.duration_ms).toBe(10 * 60_000 + 5000);
    expect(runs[1]).toMatchObject({ iterations: 2, tokens: 1200, cost_usd: 0.02, duration_ms: 66000 });
    expect(runs[2]).toMatchObject({ pipeline: "execute-review", iterations: 2, tokens: 2000, duration_ms: 75000, reason: "verify passed" });
    // reading changes nothing
    expect(host.writes).toBe(0);
  });

  it("says where each run stands, as status does: the finished one's outcome, the crashed one's resume, the running one's lock", async () => {
    const host = workdir();
    const done = await readRunStatus(W, DONE, host);
    expect(done).toMatchObject({ state: "complete", headline: "complete: verify passed", iteration: 2, tokens: 2000, resume: null, lock: null, log: { events: sampleRun().length, torn_last_line: false, malformed_lines: 0 } });
    const crashed = await readRunStatus(W, CRASHED, host);
    expect(crashed).toMatchObject({ state: "crashed", resume: `phaseloop resume ${CRASHED}`, breakers: { consecutive_failures: { count: 1, limit: null } } });
    expect(crashed.headline).toMatch(/^crashed at iteration 2/);
    const running = await readRunStatus(W, RUNNING, host);
    expect(running).toMatchObject({ state: "running", lock: { pid: 999_999, live: true }, elapsed_ms: 10 * 60_000 });
    expect(await readLock(W, host.files)).toMatchObject({ pid: 999_999, run: RUNNING, hostname: "another-machine" });
    expect(await isRunLive(W, CRASHED, null, host)).toBe(false);
    expect(await readBreakers(runPath(W, CRASHED), host.files)).toEqual({ breakers: { consecutive_failures: { count: 1, limit: null } }, hasState: true });
    expect(await selectRun(W, "20261101-13", host.files)).toEqual({ ok: true, runId: CRASHED });
    expect(await selectRun(W, undefined, host.files)).toEqual({ ok: true, runId: RUNNING });
  });

  it("asks the host whether the lock's process is alive, for a lock taken on this machine", async () => {
    const lock = JSON.stringify({ pid: 31_337, run_id: RUNNING, host: machineName(), started_at: "2026-11-01T14:00:00.000Z" });
    const files = workdir().snapshot();
    files[`${W}/.phaseloop/lock`] = lock;
    const alive = new MemoryHost({ cwd: W, files, alive: [31_337] });
    const gone = new MemoryHost({ cwd: W, files });
    expect((await readRunStatus(W, RUNNING, alive)).state).toBe("running");
    expect((await readRunStatus(W, RUNNING, gone)).state).toBe("crashed");
    expect((await listRuns(W, gone))[0]).toMatchObject({ run: RUNNING, outcome: "crashed", exit_code: 130 });
  });

  it("reads a log with a torn last line, and says why a log that is a folder cannot be read", async () => {
    const host = workdir();
    const path = `${runPath(W, DONE)}/events.jsonl`;
    host.files.appendText(path, '{"v":1,"seq":99,"ty');
    const seen: RunEvent[] = [];
    const read = await readEvents(path, (e) => seen.push(e), host.files);
    expect(read).toMatchObject({ torn: true, malformed: 0 });
    expect(seen).toEqual(sampleRun());
    host.files.remove(path);
    host.files.mkdir(path);
    expect((await readEvents(path, () => undefined, host.files)).problem).toBe("is a directory, not a file");
    expect(await readEvents(`${W}/nowhere/events.jsonl`, () => undefined, host.files)).toEqual({ torn: false, malformed: 0, bytes: 0 });
  });

  it("follows a growing log by the host's clock: new lines as they come, and stops when nobody will write more", async () => {
    const host = workdir();
    const path = `${runPath(W, CRASHED)}/events.jsonl`;
    const before = host.files.readText(path).split("\n").filter(Boolean).length;
    const seen: RunEvent[] = [];
    let live = true;
    let polls = 0;
    const more = buildEvents([{ type: "note", level: "info", message: "still here" }] as never, CRASHED, Date.UTC(2026, 10, 1, 14, 20, 0))[0]!;
    const end = await followEvents(path, (e) => seen.push(e), host, {
      pollMs: 100,
      idleCheckMs: 1000,
      isLive: async () => {
        polls++;
        // the first time it is asked the run writes once more, then it is gone
        if (polls === 1) host.files.appendText(path, `${JSON.stringify({ ...more, seq: 99 })}\n`);
        else live = false;
        return live;
      },
    });
    expect(end).toBe("not_running");
    expect(seen.length).toBe(before + 1);
    expect(seen.at(-1)).toMatchObject({ type: "note", message: "still here" });
    expect(polls).toBe(2);
    // the fake clock moved by the polls only: one idle wait before each question
    expect(host.clock.now()).toBeGreaterThanOrEqual(Date.UTC(2026, 10, 1, 14, 10, 2));
  });

  it("follows a run to its run.finished and stops there", async () => {
    const host = workdir();
    const path = `${runPath(W, DONE)}/events.jsonl`;
    const seen: RunEvent[] = [];
    expect(await followEvents(path, (e) => seen.push(e), host, { pollMs: 50 })).toBe("finished");
    expect(seen).toEqual(sampleRun());
    const aborted = new AbortController();
    aborted.abort();
    expect(await followEvents(`${runPath(W, RUNNING)}/events.jsonl`, () => undefined, host, { signal: aborted.signal })).toBe("aborted");
  });
});
