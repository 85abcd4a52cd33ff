import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { addToRunView, emptyRunView, foldRunView } from "../../src/ui/run-view.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { buildEvents, sampleRun } from "../reporters/synthetic-run.ts";

describe("a run's view", () => {
  it("counts each transition taken and each phase run, and ends the path at the outcome", () => {
    const view = foldRunView("r", sampleRun());
    expect(view.visits).toEqual({ execute: 2, verify: 2 });
    // a retry is the same visit: no edge from a phase to itself; a skipped phase is passed through
    expect(view.edges).toEqual({ "execute>review": 1, "review>verify": 1, "execute>verify": 1, "verify>execute": 1, "verify>complete": 1 });
    expect(view.rows.map((r) => [r.iteration, r.runs.length, r.failed])).toEqual([
      [1, 4, true],
      [2, 2, false],
    ]);
    const retry = view.runs.find((r) => r.attempt === 2)!;
    expect(retry).toMatchObject({ phase: "execute", status: "succeeded", tokens: 1200, output: { status: "INCOMPLETE" }, changes: ["src/a.ts"], violations: ["warn: README.md"] });
    expect(view.runs.find((r) => r.status === "skipped")?.phase).toBe("review");
    expect(view.usage.at(-1)).toMatchObject({ tokens: 2000, cost_usd: 0.031 });
    expect(view.summary.finished?.outcome).toBe("complete");
  });

  it("stacks a parallel group's members in the group's iteration and follows the group, not its members", () => {
    const view = foldRunView(
      "r",
      buildEvents([
        { type: "run.started", pipeline: "p", file: "p.yaml", hash: "h", workdir: "/w", params: {}, max_iterations: 2, phases: ["checks", "lint", "test", "fix"], version: "0" },
        { type: "iteration.started", iteration: 1, task: null },
        { type: "phase.started", iteration: 1, phase: "checks", attempt: 1, kind: "group", dir: "", command: [], members: ["lint", "test"], join: "all_success" },
        { type: "phase.started", iteration: 1, phase: "lint", attempt: 1, kind: "run", dir: "0001-lint", command: "lint" },
        { type: "phase.started", iteration: 1, phase: "test", attempt: 1, kind: "run", dir: "0002-test", command: "test" },
        { type: "phase.finished", iteration: 1, phase: "test", attempt: 1, status: "failed", error: "exit_nonzero", message: null, exit_code: 1, duration_ms: 5, tokens: 0, cost_usd: 0, output: {}, changes: [] },
        { type: "phase.finished", iteration: 1, phase: "lint", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 5, tokens: 0, cost_usd: 0, output: {}, changes: [] },
        { type: "phase.finished", iteration: 1, phase: "checks", attempt: 1, status: "failed", error: "join_failed", message: null, exit_code: null, duration_ms: 5, tokens: 0, cost_usd: 0, output: {}, changes: [] },
        { type: "phase.started", iteration: 1, phase: "fix", attempt: 1, kind: "run", dir: "0003-fix", command: "fix" },
      ]),
    );
    expect(view.runs.filter((r) => r.group === "checks").map((r) => r.phase)).toEqual(["lint", "test"]);
    expect(view.edges).toEqual({ "checks>fix": 1 });
    expect(view.rows).toHaveLength(1);
    expect(view.runs.at(-1)?.status).toBe("running");
  });

  it("gives each lane its rows and its own path", () => {
    const lane = (task: string, iteration: number): Parameters<typeof buildEvents>[0] =>
      [
        { type: "iteration.started", iteration, task, ...{} },
        { type: "phase.started", iteration, phase: "work", attempt: 1, kind: "run", dir: `000${iteration}-work`, command: "w" },
        { type: "phase.finished", iteration, phase: "work", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 1, tokens: 0, cost_usd: 0, output: {}, changes: [] },
      ].map((e) => ({ ...e, task })) as Parameters<typeof buildEvents>[0];
    const view = foldRunView("r", buildEvents([...lane("a", 1), ...lane("b", 1), ...lane("a", 2)]));
    expect(view.lanes).toEqual(["a", "b"]);
    expect(view.rows.map((r) => `${r.task}:${r.iteration}`)).toEqual(["a:1", "b:1", "a:2"]);
    expect(view.edges).toEqual({ "work>work": 1 });
  });

  it("draws an ask phase as a wait from its question to its answer, on the path, asked again or not", () => {
    const view = foldRunView("r", askRun());
    expect(view.edges).toEqual({ "plan>approve": 2, "approve>plan": 1, "approve>build": 1, "build>complete": 1 });
    expect(view.visits).toMatchObject({ plan: 2, approve: 2, build: 1 });
    const asks = view.runs.filter((r) => r.kind === "ask");
    expect(asks.map((r) => [r.iteration, r.status, r.output])).toEqual([
      [1, "succeeded", { answer: "shorter" }],
      [2, "succeeded", { answer: "approve" }],
    ]);
    const waiting = foldRunView("r", askRun().slice(0, 5));
    expect(waiting.runs.at(-1)).toMatchObject({ kind: "ask", status: "waiting", message: "Approve?" });
  });

  // the page gets the view as JSON, then folds each new event itself: it must end where the server would
  it("folded on the page after a JSON snapshot, ends where one fold of the whole log ends", () => {
    fc.assert(
      fc.property(fc.constantFrom(sampleRun(), askRun(), groupRun()), fc.nat(), (events, at) => {
        const cut = at % (events.length + 1);
        const whole = foldRunView("r", events);
        const first = foldRunView("r", events.slice(0, cut));
        const onPage = JSON.parse(JSON.stringify(first)) as typeof first;
        for (const e of events.slice(cut)) addToRunView(onPage, e);
        expect(JSON.parse(JSON.stringify(onPage))).toEqual(JSON.parse(JSON.stringify(whole)));
      }),
    );
  });

  it("keeps the usage curve and the notes bounded however long the run", () => {
    const view = emptyRunView("r");
    let seq = 0;
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
    for (let i = 1; i <= 6000; i++) {
      const base = { v: 1 as const, run: "r", at: at(i) };
      addToRunView(view, { ...base, seq: ++seq, type: "phase.started", iteration: i, phase: "a", attempt: 1, kind: "agent", dir: `${String(i).padStart(4, "0")}-a`, command: [] } as RunEvent);
      addToRunView(view, { ...base, seq: ++seq, type: "phase.finished", iteration: i, phase: "a", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 1, tokens: 10, cost_usd: 0.001, output: {}, changes: [] } as RunEvent);
      addToRunView(view, { ...base, seq: ++seq, type: "note", level: "info", message: `n${i}` } as RunEvent);
    }
    expect(view.usage.length).toBeLessThanOrEqual(2000);
    expect(view.usage.at(-1)?.tokens).toBe(60000);
    expect(view.notes).toHaveLength(200);
  });
});

/** An ask run as the CLI logs it: asked, answered by a resume, asked again, resumed without an answer, answered. */
function askRun(): RunEvent[] {
  const q = { phase: "approve", question: "Approve?" };
  return buildEvents([
    { type: "run.started", pipeline: "p", file: "p.yaml", hash: "h", workdir: "/w", params: {}, max_iterations: 3, phases: ["plan", "approve", "build"], version: "0" },
    { type: "iteration.started", iteration: 1, task: null },
    { type: "phase.started", iteration: 1, phase: "plan", attempt: 1, kind: "run", dir: "0001-plan", command: "plan" },
    { type: "phase.finished", iteration: 1, phase: "plan", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 5, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    { type: "question.asked", iteration: 1, ...q },
    { type: "run.resumed", iteration: 1, phase: null },
    { type: "question.answered", iteration: 1, ...q, answer: "shorter" },
    { type: "iteration.finished", iteration: 1, changes: [], task: null },
    { type: "iteration.started", iteration: 2, task: null },
    { type: "phase.started", iteration: 2, phase: "plan", attempt: 1, kind: "run", dir: "0002-plan", command: "plan" },
    { type: "phase.finished", iteration: 2, phase: "plan", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 5, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    { type: "question.asked", iteration: 2, ...q },
    { type: "run.resumed", iteration: 2, phase: null },
    { type: "question.asked", iteration: 2, ...q },
    { type: "run.resumed", iteration: 2, phase: null },
    { type: "question.answered", iteration: 2, ...q, answer: "approve" },
    { type: "phase.started", iteration: 2, phase: "build", attempt: 1, kind: "run", dir: "0003-build", command: "build" },
    { type: "phase.finished", iteration: 2, phase: "build", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 5, tokens: 0, cost_usd: 0, output: {}, changes: [] },
    { type: "iteration.finished", iteration: 2, changes: [], task: null },
    { type: "run.finished", outcome: "complete", reason: { code: "transition", message: "" }, exit_code: 0, iterations: 2, tokens: 0, cost_usd: 0, elapsed_ms: 10 },
  ]);
}

/** A parallel group's run, interrupted in a member and resumed. */
function groupRun(): RunEvent[] {
  const done = (phase: string, status: "succeeded" | "failed" = "succeeded") => ({ type: "phase.finished" as const, iteration: 1, phase, attempt: 1, status, error: status === "failed" ? ("exit_nonzero" as const) : null, message: null, exit_code: status === "failed" ? 1 : 0, duration_ms: 5, tokens: 3, cost_usd: 0.01, output: {}, changes: [] });
  return buildEvents([
    { type: "run.started", pipeline: "p", file: "p.yaml", hash: "h", workdir: "/w", params: {}, max_iterations: 2, phases: ["checks", "lint", "test", "fix"], version: "0" },
    { type: "iteration.started", iteration: 1, task: null },
    { type: "phase.started", iteration: 1, phase: "checks", attempt: 1, kind: "group", dir: "", command: [], members: ["lint", "test"], join: "all_success" },
    { type: "phase.started", iteration: 1, phase: "lint", attempt: 1, kind: "run", dir: "0001-lint", command: "lint" },
    { type: "phase.started", iteration: 1, phase: "test", attempt: 1, kind: "run", dir: "0002-test", command: "test" },
    done("lint"),
    { type: "run.interrupted", signal: "SIGINT", iteration: 1, phase: "test" },
    { type: "run.resumed", iteration: 1, phase: "test" },
    { type: "phase.started", iteration: 1, phase: "checks", attempt: 1, kind: "group", dir: "", command: [], members: ["lint", "test"], join: "all_success" },
    { type: "phase.started", iteration: 1, phase: "test", attempt: 1, kind: "run", dir: "0003-test", command: "test" },
    done("test", "failed"),
    done("checks", "failed"),
    { type: "phase.started", iteration: 1, phase: "fix", attempt: 1, kind: "run", dir: "0004-fix", command: "fix" },
    done("fix"),
    { type: "run.finished", outcome: "failed", reason: { code: "transition", message: "" }, exit_code: 1, iterations: 1, tokens: 9, cost_usd: 0.03, elapsed_ms: 10 },
  ]);
}
