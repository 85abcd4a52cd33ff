import { describe, expect, it } from "vitest";
import { addToRunSummary, emptyRunSummary, runStateOf } from "../../src/records/run-summary.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { buildEvents, sampleRun } from "../reporters/synthetic-run.ts";

function summarize(events: readonly RunEvent[]) {
  const summary = emptyRunSummary();
  for (const event of events) addToRunSummary(summary, event);
  return summary;
}

describe("run summary", () => {
  it("counts phases, retries and usage of a finished run", () => {
    const s = summarize(sampleRun());
    expect(s).toMatchObject({ phases_run: 5, succeeded: 3, failures: 2, skipped: 1, retries: 1, iteration: 2, tokens: 2000, phase: null });
    expect(runStateOf(s, false)).toBe("complete");
  });

  it("tracks the phase in flight", () => {
    const s = summarize(sampleRun().slice(0, 13));
    expect(s.phase).toBe("verify");
    expect(runStateOf(s, true)).toBe("running");
    expect(runStateOf(s, false)).toBe("crashed");
  });

  it("forgets an interruption once the run is resumed", () => {
    const events = buildEvents([
      { type: "iteration.started", iteration: 1, task: null },
      { type: "run.interrupted", signal: "SIGTERM", iteration: 1, phase: null },
      { type: "run.resumed", iteration: 1, phase: null },
    ]);
    const s = summarize(events.slice(0, 2));
    expect(runStateOf(s, false)).toBe("interrupted");
    const resumed = summarize(events);
    expect(resumed.resumes).toBe(1);
    expect(runStateOf(resumed, false)).toBe("crashed");
  });

  it("keeps the latest status of each task", () => {
    const s = summarize(
      buildEvents([
        { type: "task.updated", task: "T-1", status: "pending", attempts: 1, reason: null },
        { type: "task.updated", task: "T-1", status: "blocked", attempts: 5, reason: "max attempts" },
        { type: "task.updated", task: "T-2", status: "done", attempts: 1, reason: null },
      ]),
    );
    expect(s.tasks).toEqual({ "T-1": { status: "blocked", attempts: 5, reason: "max attempts" }, "T-2": { status: "done", attempts: 1, reason: null } });
  });

  it("calls a run with no events and no live lock empty", () => {
    expect(runStateOf(emptyRunSummary(), false)).toBe("empty");
  });
});
