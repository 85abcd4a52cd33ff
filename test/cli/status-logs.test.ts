import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { main as logs } from "../../src/commands/logs.ts";
import { main as status } from "../../src/commands/status.ts";
import type { RunStatus } from "../../src/commands/status.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { buildEvents, sampleRun } from "../reporters/synthetic-run.ts";

let workdir = "";

beforeEach(() => {
  workdir = mkdtempSync(join(tmpdir(), "phaseloop-status-"));
});

afterEach(() => {
  rmSync(workdir, { recursive: true, force: true });
});

function io(): { stdout: { write(s: string): void }; stderr: { write(s: string): void }; out: () => string; err: () => string; cwd: string; color: boolean } {
  let out = "";
  let err = "";
  return { stdout: { write: (s) => void (out += s) }, stderr: { write: (s) => void (err += s) }, out: () => out, err: () => err, cwd: workdir, color: false };
}

/** A fabricated run directory: events.jsonl (without output lines, as the runner writes it) and optional extras. */
function writeRun(runId: string, events: readonly RunEvent[], extra: { state?: unknown; run?: unknown; tail?: string } = {}): string {
  const dir = join(workdir, ".phaseloop", "runs", runId);
  mkdirSync(dir, { recursive: true });
  const lines = events.filter((e) => e.type !== "phase.output").map((e) => `${JSON.stringify({ ...e, run: runId })}\n`);
  writeFileSync(join(dir, "events.jsonl"), lines.join("") + (extra.tail ?? ""));
  if (extra.state !== undefined) writeFileSync(join(dir, "state.json"), JSON.stringify(extra.state));
  if (extra.run !== undefined) writeFileSync(join(dir, "run.json"), JSON.stringify(extra.run));
  return dir;
}

function writeLock(runId: string, pid: number): void {
  writeFileSync(join(workdir, ".phaseloop", "lock"), JSON.stringify({ pid, run_id: runId, started_at: new Date().toISOString(), hostname: hostname() }));
}

/** A pid that is certainly not running: larger than any pid_max. */
const DEAD_PID = 2 ** 22 + 12345;

// Stops after "verify started" in iteration 1: 13 events, 10 of them logged (output lines are not).
const unfinished = (): RunEvent[] => sampleRun().slice(0, 13);

async function statusJson(args: string[] = []): Promise<RunStatus> {
  const streams = io();
  const code = await status([...args, "--json"], streams);
  expect(code).toBe(0);
  return JSON.parse(streams.out()) as RunStatus;
}

describe("phaseloop status", () => {
  it("reports the latest run's outcome, counters, usage and last error", async () => {
    writeRun("20261101-110000-aaaa", sampleRun().slice(0, 5));
    writeRun("20261101-120400-ab12", sampleRun());
    const s = await statusJson();
    expect(s.run).toBe("20261101-120400-ab12");
    expect(s.state).toBe("complete");
    expect(s.outcome).toMatchObject({ outcome: "complete", exit_code: 0, reason: { code: "transition" } });
    expect(s.iteration).toBe(2);
    expect(s.counters).toMatchObject({ phases_run: 5, succeeded: 3, failed: 2, skipped: 1, retries: 1, policy_violations: 1, warnings: 1 });
    expect(s.tokens).toBe(2000);
    expect(s.cost_usd).toBeCloseTo(0.031);
    expect(s.last_error).toMatchObject({ phase: "verify", iteration: 1, error: "exit_nonzero", exit_code: 1 });
    expect(s.resume).toBeNull();
  });

  it("prints a readable summary", async () => {
    writeRun("20261101-120400-ab12", sampleRun());
    const streams = io();
    expect(await status([], streams)).toBe(0);
    const text = streams.out();
    expect(text).toContain("run 20261101-120400-ab12 · execute-review (pipelines/execute-review.yaml)");
    expect(text).toMatch(/status\s+complete: verify passed · exit 0/);
    expect(text).toMatch(/iteration\s+2 of 5/);
    expect(text).toMatch(/phases\s+5 run · 3 succeeded · 2 failed · 1 skipped · 1 retry/);
    expect(text).toMatch(/usage\s+2,000 tokens · \$0.03/);
    expect(text).toMatch(/last error\s+iteration 1 · verify: exit code 1/);
    expect(text).not.toMatch(/\u001b\[/);
  });

  it("says a run is running while a live process holds its lock", async () => {
    writeRun("20261101-120400-ab12", unfinished());
    writeLock("20261101-120400-ab12", process.pid);
    const s = await statusJson();
    expect(s.state).toBe("running");
    expect(s.headline).toBe("running: iteration 1, phase verify");
    expect(s.lock).toEqual({ pid: process.pid, live: true });
    expect(s.resume).toBeNull();
  });

  it("says a run crashed when its lock's process is gone, and how to resume it", async () => {
    writeRun("20261101-120400-ab12", unfinished());
    writeLock("20261101-120400-ab12", DEAD_PID);
    const s = await statusJson();
    expect(s.state).toBe("crashed");
    expect(s.resume).toBe("phaseloop resume 20261101-120400-ab12");
    expect(s.headline).toContain("phaseloop resume 20261101-120400-ab12");
  });

  it("says a run was interrupted when it logged the signal", async () => {
    const events = [...unfinished(), ...buildEvents([{ type: "run.interrupted", signal: "SIGINT", iteration: 1, phase: "verify" }])];
    writeRun("20261101-120400-ab12", events.map((e, i) => ({ ...e, seq: i + 1 })));
    const s = await statusJson();
    expect(s.state).toBe("interrupted");
    expect(s.interrupted).toMatchObject({ signal: "SIGINT", phase: "verify" });
    expect(s.resume).toBe("phaseloop resume 20261101-120400-ab12");
  });

  it("shows breaker counts from state.json against the limits it finds", async () => {
    writeRun("20261101-120400-ab12", unfinished(), {
      state: { status: "running", counters: { consecutive_failures: 2, no_progress: 1 }, limits: { consecutive_failures: 3, no_progress: 3 } },
    });
    const s = await statusJson();
    expect(s.breakers).toEqual({ consecutive_failures: { count: 2, limit: 3 }, no_progress: { count: 1, limit: 3 } });
    const streams = io();
    await status([], streams);
    expect(streams.out()).toMatch(/breakers\s+consecutive failures 2\/3 · no progress 1\/3/);
  });

  it("reads a garbled state.json as no breakers", async () => {
    const dir = writeRun("20261101-120400-ab12", unfinished());
    writeFileSync(join(dir, "state.json"), "{ not json");
    const s = await statusJson();
    expect(s.breakers).toEqual({});
  });

  it("skips a torn last line and says so", async () => {
    writeRun("20261101-120400-ab12", unfinished(), { tail: '{"v":1,"seq":14,"at":"2026-11-01T12:04:13.000Z","run":"20261101-120400-ab12","type":"phase.fin' });
    const s = await statusJson();
    expect(s.log).toEqual({ events: 10, torn_last_line: true, malformed_lines: 0 });
    expect(s.counters.phases_run).toBe(2);
  });

  it("accepts a unique prefix of a run id", async () => {
    writeRun("20261101-110000-aaaa", sampleRun());
    writeRun("20261101-120400-ab12", sampleRun());
    expect((await statusJson(["20261101-11"])).run).toBe("20261101-110000-aaaa");
  });

  it("rejects an unknown run id with exit 2 and a did-you-mean", async () => {
    writeRun("20261101-120400-ab12", sampleRun());
    const streams = io();
    expect(await status(["20261101-120400-ab13"], streams)).toBe(2);
    expect(streams.err()).toContain('unknown run "20261101-120400-ab13"');
    expect(streams.err()).toContain('did you mean "20261101-120400-ab12"?');
    expect(streams.out()).toBe("");
  });

  it("rejects an ambiguous prefix with exit 2", async () => {
    writeRun("20261101-110000-aaaa", sampleRun());
    writeRun("20261101-120400-ab12", sampleRun());
    const streams = io();
    expect(await status(["2026"], streams)).toBe(2);
    expect(streams.err()).toContain("ambiguous");
  });

  it("exits 2 when the workdir has no runs", async () => {
    const streams = io();
    expect(await status([], streams)).toBe(2);
    expect(streams.err()).toContain(`no runs in ${join(workdir, ".phaseloop")}`);
  });

  it("exits 2 on an unknown option", async () => {
    const streams = io();
    expect(await status(["--jsn"], streams)).toBe(2);
    expect(streams.err()).toContain('unknown option "--jsn"');
  });

  it("honours --workdir", async () => {
    const other = join(workdir, "nested");
    mkdirSync(join(other, ".phaseloop", "runs", "20261101-130000-cccc"), { recursive: true });
    writeFileSync(join(other, ".phaseloop", "runs", "20261101-130000-cccc", "events.jsonl"), sampleRun().map((e) => JSON.stringify(e)).join("\n") + "\n");
    const s = await statusJson(["--workdir", "nested"]);
    expect(s.run).toBe("20261101-130000-cccc");
  });

  it("sums up a 100,000-event log read as a stream", async () => {
    const runId = "20261101-120400-big0";
    const dir = join(workdir, ".phaseloop", "runs", runId);
    mkdirSync(dir, { recursive: true });
    const path = join(dir, "events.jsonl");
    writeFileSync(path, "");
    const start = Date.UTC(2026, 10, 1);
    let seq = 0;
    const line = (body: Record<string, unknown>): string => JSON.stringify({ v: 1, seq: ++seq, at: new Date(start + seq * 10).toISOString(), run: runId, ...body });
    let chunk: string[] = [line({ type: "run.started", pipeline: "big", file: "big.yaml", hash: "h", workdir: "/w", params: {}, max_iterations: 20_000, phases: ["a"], version: "0.1.0" })];
    let iteration = 0;
    while (seq < 100_000 - 4) {
      iteration += 1;
      chunk.push(line({ type: "iteration.started", iteration, task: null }));
      chunk.push(line({ type: "phase.started", iteration, phase: "a", attempt: 1, kind: "run", dir: String(iteration).padStart(4, "0") + "-a", command: "true" }));
      chunk.push(line({ type: "phase.finished", iteration, phase: "a", attempt: 1, status: iteration % 10 === 0 ? "failed" : "succeeded", error: iteration % 10 === 0 ? "exit_nonzero" : null, message: null, exit_code: iteration % 10 === 0 ? 1 : 0, duration_ms: 2, tokens: 10, cost_usd: 0, output: {}, changes: [] }));
      chunk.push(line({ type: "iteration.finished", iteration, changes: [], task: null }));
      if (chunk.length >= 4000) {
        appendFileSync(path, chunk.join("\n") + "\n");
        chunk = [];
      }
    }
    appendFileSync(path, chunk.join("\n") + "\n");
    const s = await statusJson();
    expect(s.log.events).toBe(seq);
    expect(seq).toBeGreaterThanOrEqual(99_996);
    expect(s.counters.phases_run).toBe(iteration);
    expect(s.counters.failed).toBe(Math.floor(iteration / 10));
    expect(s.tokens).toBe(iteration * 10);
    expect(s.state).toBe("crashed");
  });
});

describe("phaseloop logs", () => {
  it("prints every logged event as one readable line", async () => {
    const events = sampleRun();
    writeRun("20261101-120400-ab12", events);
    const streams = io();
    expect(await logs([], streams, { utc: true })).toBe(0);
    const lines = streams.out().trimEnd().split("\n");
    expect(lines).toHaveLength(events.filter((e) => e.type !== "phase.output").length);
    expect(lines[0]).toBe("12:04:00 run 20261101-120400-ab12 started · execute-review (pipelines/execute-review.yaml) · up to 5 iterations");
    expect(lines.at(-1)).toBe("12:04:23 run complete: verify passed · 2 iterations in 1m15s · 2,000 tokens · $0.03");
  });

  it("prints the stored NDJSON with --json", async () => {
    writeRun("20261101-120400-ab12", sampleRun());
    const streams = io();
    expect(await logs(["--json"], streams)).toBe(0);
    const parsed = streams.out().trimEnd().split("\n").map((l) => JSON.parse(l) as RunEvent);
    expect(parsed.map((e) => e.type)).toEqual(sampleRun().filter((e) => e.type !== "phase.output").map((e) => e.type));
  });

  it("skips a torn last line and warns on stderr", async () => {
    writeRun("20261101-120400-ab12", unfinished(), { tail: '{"v":1,"seq":14,"type":"pha' });
    const streams = io();
    expect(await logs([], streams)).toBe(0);
    expect(streams.out().trimEnd().split("\n")).toHaveLength(10);
    expect(streams.err()).toContain("torn");
  });

  it("rejects an unknown run id with exit 2 and a did-you-mean", async () => {
    writeRun("20261101-120400-ab12", sampleRun());
    const streams = io();
    expect(await logs(["20261101-120400-ab1x"], streams)).toBe(2);
    expect(streams.err()).toContain('did you mean "20261101-120400-ab12"?');
  });

  it("follows a growing log, completing a torn line, until run.finished", async () => {
    const events = sampleRun().filter((e) => e.type !== "phase.output");
    const dir = writeRun("20261101-120400-ab12", events.slice(0, 5));
    writeLock("20261101-120400-ab12", process.pid);
    const streams = io();
    const done = logs(["--follow"], streams, { pollMs: 10, utc: true });
    const path = join(dir, "events.jsonl");
    await new Promise((r) => setTimeout(r, 60));
    expect(streams.out().trimEnd().split("\n")).toHaveLength(5);
    const next = `${JSON.stringify(events[5])}\n`;
    appendFileSync(path, next.slice(0, 20));
    await new Promise((r) => setTimeout(r, 60));
    expect(streams.out().trimEnd().split("\n")).toHaveLength(5);
    appendFileSync(path, next.slice(20));
    // Events after run.finished are not printed: the follow has ended.
    appendFileSync(path, events.slice(6).map((e) => `${JSON.stringify(e)}\n`).join("") + `${JSON.stringify({ ...events[0], seq: 99 })}\n`);
    expect(await done).toBe(0);
    const lines = streams.out().trimEnd().split("\n");
    expect(lines).toHaveLength(events.length);
    expect(lines.at(-1)).toContain("run complete");
  });

  it("stops following a run that is not running any more", async () => {
    writeRun("20261101-120400-ab12", unfinished());
    writeLock("20261101-120400-ab12", DEAD_PID);
    const streams = io();
    expect(await logs(["--follow"], streams, { pollMs: 10, idleCheckMs: 30 })).toBe(0);
    expect(streams.out().trimEnd().split("\n")).toHaveLength(10);
    expect(streams.err()).toContain("is not running");
  });

  it("stops following when interrupted and exits 130", async () => {
    writeRun("20261101-120400-ab12", unfinished());
    writeLock("20261101-120400-ab12", process.pid);
    const controller = new AbortController();
    const streams = io();
    const done = logs(["-f"], streams, { pollMs: 10, idleCheckMs: 20, signal: controller.signal });
    setTimeout(() => controller.abort(), 80);
    expect(await done).toBe(130);
    expect(streams.out().trimEnd().split("\n")).toHaveLength(10);
  });
});
