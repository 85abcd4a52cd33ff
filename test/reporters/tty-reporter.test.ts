import { describe, expect, it } from "vitest";
import { createTtyReporter } from "../../src/reporters/tty-reporter.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { buildEvents, sampleRun } from "./synthetic-run.ts";

/** A terminal-shaped sink: log-update reads columns and rows; listr2 swaps `write` while it draws. */
function fakeTerminal(columns = 160): { stream: { write(chunk: string): boolean; columns: number; rows: number; isTTY: true }; text: () => string } {
  let raw = "";
  const stream = {
    columns,
    rows: 60,
    isTTY: true as const,
    write(chunk: string): boolean {
      raw += chunk;
      return true;
    },
  };
  return { stream, text: () => raw };
}

function stripAnsi(text: string): string {
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "");
}

async function play(events: readonly RunEvent[], options: { gapMs?: number; maxSteps?: number; columns?: number } = {}): Promise<string> {
  const terminal = fakeTerminal(options.columns);
  const reporter = createTtyReporter(
    { stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} },
    { tickMs: 20, maxSteps: options.maxSteps },
  );
  for (const event of events) {
    reporter.onEvent(event);
    if (options.gapMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.gapMs));
  }
  await reporter.close();
  return stripAnsi(terminal.text());
}

/** The text after the last frame: what stays on the screen once every list has ended. */
function finalScreen(text: string, marker: string): string {
  return text.slice(text.lastIndexOf(marker));
}

describe("createTtyReporter", () => {
  it("draws iterations as groups with their phases, notes and the outcome", async () => {
    const text = await play(sampleRun(), { gapMs: 15 });
    expect(text).toContain("phaseloop · execute-review · run 20261101-120400-ab12 · up to 5 iterations");
    const first = finalScreen(text.slice(0, text.indexOf("hook after_iteration")), "✖ iteration 1/5");
    // an iteration whose phases failed is not shown with a tick
    expect(first).toMatch(/✖ iteration 1\/5 · 1 file changed · 2 failed phases/);
    expect(first).toContain("✖ execute failed in 4.1s: transient: HTTP 503 (exit code 1)");
    expect(first).toContain("↓ execute · retried after 20s (transient: HTTP 503)");
    expect(first).toContain("✔ execute (attempt 2) · 1m01s · 1,200 tokens · $0.02");
    expect(first).toContain("↓ execute · policy violation (warn): 1 file outside the write globs");
    expect(first).toContain("↓ review skipped: when is false");
    expect(first).toContain("✖ verify failed in 2.5s: exit code 1");
    // Steps keep their order.
    expect(first.indexOf("execute failed")).toBeLessThan(first.indexOf("retried after"));
    expect(first.indexOf("retried after")).toBeLessThan(first.indexOf("review skipped"));
    expect(text).toContain("hook after_iteration ok in 0.3s");
    const end = finalScreen(text, "✔ iteration 2/5");
    expect(end).toContain("↓ warning: Budget 80% used");
    expect(end).toContain("✔ complete: verify passed\n");
    expect(end).toContain("2 iterations in 1m15s · 2,000 tokens · $0.03");
    expect(end).toContain("run folder: ");
    expect(end).toMatch(/report: +\S*\.phaseloop\/runs\/20261101-120400-ab12\/summary\.md/);
  });

  it("ends cleanly when every event arrives at once", async () => {
    const text = await play(sampleRun());
    expect(text).toContain("✖ verify failed in 2.5s: exit code 1");
    expect(text).toContain("✔ complete: verify passed\n");
    // The outcome and where the run's files are are the last things written.
    expect(text.trimEnd()).toMatch(/2 iterations in 1m15s · 2,000 tokens · \$0\.03\n {2}run folder: .*\n {2}report: .*summary\.md$/);
  });

  it("shows the agent's last output line while the phase runs", async () => {
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10 });
    const events = sampleRun();
    for (const event of events.slice(0, 4)) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(stripAnsi(terminal.text())).toContain("Reading TASK.md");
    for (const event of events.slice(4)) reporter.onEvent(event);
    await reporter.close();
  });

  it("draws the latest line of a flood of output, not every line", async () => {
    const lines = Array.from({ length: 5000 }, (_unused, i) => ({ type: "phase.output" as const, phase: "a", stream: "stdout" as const, line: `line ${i + 1}` }));
    const events = buildEvents([
      { type: "iteration.started", iteration: 1, task: null },
      { type: "phase.started", iteration: 1, phase: "a", attempt: 1, kind: "run", dir: "0001-a", command: ["x"] },
      ...lines,
    ]);
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10 });
    for (const event of events) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const text = stripAnsi(terminal.text());
    expect(text).toContain("line 5000");
    expect(text).not.toContain("line 2500\n");
    await reporter.close();
  });

  it("strips escape sequences from agent output before drawing it", async () => {
    const events = buildEvents([
      { type: "iteration.started", iteration: 1, task: null },
      { type: "phase.started", iteration: 1, phase: "a", attempt: 1, kind: "agent", dir: "0001-a", command: ["x"] },
      { type: "phase.output", phase: "a", stream: "stdout", line: "\u001b[2J\u001b[Hhello\u0007 world" },
    ]);
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10 });
    for (const event of events) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await reporter.close();
    expect(terminal.text()).not.toContain("\u001b[2J");
    expect(terminal.text()).toContain("hello world");
  });

  it("sums up the steps past the per-iteration cap in one line", async () => {
    const phases = Array.from({ length: 12 }, (_unused, i) => [
      { type: "phase.started" as const, iteration: 1, phase: `p${i}`, attempt: 1, kind: "run" as const, dir: `000${i}-p${i}`, command: "true" },
      { type: "phase.finished" as const, iteration: 1, phase: `p${i}`, attempt: 1, status: "succeeded" as const, error: null, message: null, exit_code: 0, duration_ms: 10, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    ]).flat();
    const events = buildEvents([{ type: "iteration.started", iteration: 1, task: null }, ...phases, { type: "iteration.finished", iteration: 1, changes: [], task: null }]);
    const text = await play(events, { maxSteps: 5 });
    const end = finalScreen(text, "✔ iteration 1");
    expect(end).toContain("✔ p3 · 0.0s");
    expect(end).not.toContain("✔ p4 · 0.0s");
    expect(end).toContain("8 more steps");
  });

  it("closes an open phase as interrupted when the run is interrupted", async () => {
    const events = buildEvents([
      { type: "run.started", pipeline: "p", file: "p.yaml", hash: "h", workdir: "/w", params: {}, max_iterations: 3, phases: ["a"], version: "0.1.0" },
      { type: "iteration.started", iteration: 1, task: "T-1" },
      { type: "phase.started", iteration: 1, phase: "a", attempt: 1, kind: "agent", dir: "0001-a", command: ["x"] },
      { type: "run.interrupted", signal: "SIGINT", iteration: 1, phase: "a" },
    ]);
    const text = await play(events, { gapMs: 10 });
    expect(text).toMatch(/iteration 1\/3 · task T-1/);
    expect(text).toMatch(/✖ a · [\d.]+s \(interrupted\)/);
    expect(text).toContain("interrupted by SIGINT at iteration 1, phase a · resume with phaseloop resume 20261101-120400-ab12");
  });

  it("leaves SIGINT to the runner", async () => {
    const before = process.listenerCount("SIGINT");
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} });
    const events = sampleRun();
    for (const event of events.slice(0, 3)) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(process.listenerCount("SIGINT")).toBe(before);
    for (const event of events.slice(3)) reporter.onEvent(event);
    await reporter.close();
  });

  it("ends cleanly when closed without any event", async () => {
    const text = await play([]);
    expect(text).toBe("");
  });
});

describe("a resumed run", () => {
  it("gets the same view as a fresh one: header, iteration N/M and its steps, then the next iterations", async () => {
    const events = buildEvents([
      { type: "run.resumed", iteration: 2, phase: "work", pipeline: "demo", workdir: "/w", max_iterations: 6 },
      { type: "phase.started", iteration: 2, phase: "work", attempt: 1, kind: "agent", dir: "0003-work", command: ["a"] },
      { type: "phase.output", phase: "work", stream: "stdout", line: "working" },
      { type: "phase.finished", iteration: 2, phase: "work", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 1000, tokens: 0, cost_usd: 0, output: {}, changes: [] },
      { type: "iteration.finished", iteration: 2, changes: [], task: null },
      { type: "iteration.started", iteration: 3, task: null },
      { type: "phase.started", iteration: 3, phase: "work", attempt: 1, kind: "agent", dir: "0004-work", command: ["a"] },
      { type: "phase.finished", iteration: 3, phase: "work", attempt: 1, status: "failed", error: "exit_nonzero", message: "exit code 1", exit_code: 1, duration_ms: 1000, tokens: 0, cost_usd: 0, output: {}, changes: [] },
      { type: "iteration.finished", iteration: 3, changes: [], task: null },
      { type: "run.finished", outcome: "stopped", reason: { code: "no_progress", message: "no file changed in 2 iterations in a row (no_progress: 2)" }, exit_code: 3, iterations: 3, tokens: 0, cost_usd: 0, elapsed_ms: 5000 },
    ]);
    const text = await play(events, { gapMs: 10 });
    expect(text).toContain("phaseloop · demo · run 20261101-120400-ab12 · resumed at iteration 2, phase work · up to 6 iterations");
    expect(finalScreen(text, "iteration 2/6")).toMatch(/^iteration 2\/6/);
    expect(text).toMatch(/✔ iteration 2\/6/);
    expect(text).toMatch(/✖ iteration 3\/6 · no files changed · 1 failed phase/);
    expect(text).toContain("✖ work failed in 1.0s: exit code 1");
    expect(text).toContain("■ stopped: no file changed in 2 iterations in a row\n");
  });
});

describe("the lanes of a run with parallel tasks", () => {
  const laneRun = (): RunEvent[] =>
    buildEvents([
      { type: "run.started", pipeline: "queue", file: "/r/p.yaml", hash: "h", workdir: "/r", params: {}, max_iterations: 9, phases: ["execute", "verify"], version: "0" },
      { type: "lane.started", task: "a", branch: "phaseloop/r/a", worktree: "/r/.phaseloop/lanes/r/a", base: "c0" },
      { type: "lane.started", task: "b", branch: "phaseloop/r/b", worktree: "/r/.phaseloop/lanes/r/b", base: "c0" },
      { type: "iteration.started", iteration: 1, task: "a" },
      { type: "phase.started", iteration: 1, phase: "execute", attempt: 1, kind: "agent", dir: "0001-execute", command: ["x"], task: "a" },
      { type: "iteration.started", iteration: 1, task: "b" },
      { type: "phase.started", iteration: 1, phase: "execute", attempt: 1, kind: "agent", dir: "0001-execute", command: ["x"], task: "b" },
      { type: "phase.output", phase: "execute", stream: "stdout", line: "writing a.txt", task: "a" },
      { type: "phase.output", phase: "execute", stream: "stdout", line: "writing b.txt", task: "b" },
    ] as never);

  it("draws every running lane at once, each with its task, iteration, phase, timer and the agent's last line", async () => {
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10 });
    for (const event of laneRun()) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const frame = stripAnsi(terminal.text());
    const last = frame.slice(frame.lastIndexOf("a · iteration 1"));
    expect(last).toMatch(/a · iteration 1 · execute · \d/);
    expect(last).toMatch(/b · iteration 1 · execute · \d/);
    expect(frame).toContain("writing a.txt");
    expect(frame).toContain("writing b.txt");
    for (const event of buildEvents([
      { type: "phase.finished", iteration: 1, phase: "execute", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 900, tokens: 0, cost_usd: 0, output: {}, changes: ["a.txt"], task: "a" },
      { type: "lane.merged", task: "a", branch: "phaseloop/r/a", into: "main", commit: "c1", rebased: false },
      { type: "lane.conflict", task: "b", branch: "phaseloop/r/b", into: "main", files: ["shared.txt"], action: "blocked" },
      { type: "lane.blocked", task: "b", branch: "phaseloop/r/b", status: "blocked", reason: "conflicts with main in shared.txt", conflicts: ["shared.txt"] },
      { type: "run.finished", outcome: "blocked", reason: { code: "tasks_blocked", message: "1 task is blocked" }, exit_code: 3, iterations: 2, tokens: 0, cost_usd: 0, elapsed_ms: 2000 },
    ] as never)) reporter.onEvent(event);
    await reporter.close();
    const end = stripAnsi(terminal.text());
    expect(end).toMatch(/✔ a · merged into main · 1 iteration/);
    expect(end).toMatch(/✖ b · blocked: conflicts with main in shared\.txt · branch phaseloop\/r\/b/);
    expect(end.indexOf("b · blocked")).toBeLessThan(end.indexOf("■ blocked: 1 task is blocked"));
  });
});
