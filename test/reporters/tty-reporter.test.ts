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
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10, revealMs: 0 });
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
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10, revealMs: 0 });
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
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10, revealMs: 0 });
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

/** A loop of `n` quick iterations of one phase `tick`, the `failing` ones failed. */
function quickLoop(n: number, failing: ReadonlySet<number> = new Set()): RunEvent[] {
  const bodies = [];
  for (let i = 1; i <= n; i++) {
    const failed = failing.has(i);
    bodies.push(
      { type: "iteration.started" as const, iteration: i, task: null },
      { type: "phase.started" as const, iteration: i, phase: "tick", attempt: 1, kind: "run" as const, dir: `${String(i).padStart(4, "0")}-tick`, command: "true" },
      { type: "phase.finished" as const, iteration: i, phase: "tick", attempt: 1, status: failed ? ("failed" as const) : ("succeeded" as const), error: failed ? ("exit_nonzero" as const) : null, message: null, exit_code: failed ? 1 : 0, duration_ms: 2, tokens: 0, cost_usd: 0, output: {}, changes: [] },
      { type: "iteration.finished" as const, iteration: i, changes: [], task: null },
    );
  }
  return buildEvents([
    { type: "run.started", pipeline: "quick", file: "q.yaml", hash: "h", workdir: "/w", params: {}, max_iterations: n, phases: ["tick"], version: "0.1.0" },
    ...bodies,
    { type: "run.finished", outcome: "complete", reason: { code: "transition", message: "done" }, exit_code: 0, iterations: n, tokens: 0, cost_usd: 0, elapsed_ms: 3000 },
  ]);
}

describe("iterations too quick to draw", () => {
  it("are written as their lists would have left them, and nothing is drawn live", async () => {
    const text = await play(quickLoop(300, new Set([7])), { columns: 100 });
    // a live frame is erased line by line before the next one: a quick loop draws none
    expect(text).not.toContain("\u001b[1A");
    expect(text).not.toContain("❯");
    expect(text).toMatch(/^✔ iteration 1\/300 · no files changed · [\d.]+s · run [\d.]+s\n {2}✔ tick · 0\.0s$/m);
    expect(text).toMatch(/^✖ iteration 7\/300 · no files changed · 1 failed phase · [\d.]+s · run [\d.]+s\n {2}✖ tick failed in 0\.0s: exit code 1$/m);
    expect(text).toMatch(/^✔ iteration 300\/300 · /m);
    // in order, each once, then the outcome
    const at = (i: number) => text.indexOf(`iteration ${i}/300 ·`);
    for (let i = 2; i <= 300; i++) expect(at(i)).toBeGreaterThan(at(i - 1));
    expect(text.match(/iteration 150\/300 ·/g)).toHaveLength(1);
    expect(text.indexOf("✔ complete: done")).toBeGreaterThan(at(300));
  });

  it("sums up the steps past the cap in one line, as a drawn list does", async () => {
    const phases = Array.from({ length: 7 }, (_unused, i) => [
      { type: "phase.started" as const, iteration: 1, phase: `p${i}`, attempt: 1, kind: "run" as const, dir: `000${i}-p${i}`, command: "true" },
      { type: "phase.finished" as const, iteration: 1, phase: `p${i}`, attempt: 1, status: "succeeded" as const, error: null, message: null, exit_code: 0, duration_ms: 10, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    ]).flat();
    const text = await play(buildEvents([{ type: "iteration.started", iteration: 1, task: null }, ...phases, { type: "iteration.finished", iteration: 1, changes: [], task: null }]), { maxSteps: 5 });
    expect(text).toContain("  ✔ p3 · 0.0s\n  ✔ 3 more steps\n");
    expect(text).not.toContain("p4 · 0.0s");
  });

  it("an iteration still running after revealMs is drawn live, with its phase as it runs", async () => {
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10, revealMs: 40 });
    const events = quickLoop(1);
    for (const event of events.slice(0, 3)) reporter.onEvent(event);
    expect(stripAnsi(terminal.text())).not.toContain("iteration 1/1");
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(stripAnsi(terminal.text())).toMatch(/❯ iteration 1\/1 · [\d.]+s/);
    expect(stripAnsi(terminal.text())).toMatch(/tick · [\d.]+s/);
    for (const event of events.slice(3)) reporter.onEvent(event);
    await reporter.close();
    expect(finalScreen(stripAnsi(terminal.text()), "✔ iteration 1/1")).toMatch(/^✔ iteration 1\/1 · no files changed · [\d.]+s · run [\d.]+s\n {2}✔ tick · 0\.0s\n/);
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

  it("redraws lanes that move fast at most once a frame, showing where they are", async () => {
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 0 });
    for (const event of laneRun()) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const before = terminal.text().length;
    const burst = [];
    for (let i = 2; i <= 500; i++) {
      burst.push(
        { type: "iteration.started" as const, iteration: i, task: "a" },
        { type: "phase.started" as const, iteration: i, phase: "execute", attempt: 1, kind: "agent" as const, dir: `${i}-execute`, command: ["x"], task: "a" },
        { type: "phase.output" as const, phase: "execute", stream: "stdout" as const, line: `step ${i}`, task: "a" },
      );
    }
    for (const event of buildEvents(burst as never)) reporter.onEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const frames = stripAnsi(terminal.text().slice(before));
    // each frame draws both lanes: 1,500 events make a few frames, not 1,500
    expect(frames.match(/b · iteration 1 · execute/g)!.length).toBeLessThan(20);
    expect(frames).toMatch(/a · iteration 500 · execute · \d/);
    expect(frames).toContain("step 500");
    reporter.onEvent(buildEvents([{ type: "run.finished", outcome: "stopped", reason: { code: "interrupted", message: "stop" }, exit_code: 3, iterations: 500, tokens: 0, cost_usd: 0, elapsed_ms: 1000 }] as never)[0]!);
    await reporter.close();
  });

  it("draws every running lane at once, each with its task, iteration, phase, timer and the agent's last line", async () => {
    const terminal = fakeTerminal();
    const reporter = createTtyReporter({ stdout: terminal.stream, stderr: terminal.stream, isTTY: true, color: false, env: {} }, { tickMs: 10, revealMs: 0 });
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
