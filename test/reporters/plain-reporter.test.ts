import { describe, expect, it } from "vitest";
import { createPlainReporter } from "../../src/reporters/plain-reporter.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { buildEvents, sampleRun } from "./synthetic-run.ts";

function collect(events: readonly RunEvent[], options: Parameters<typeof createPlainReporter>[1]): Promise<string> {
  let text = "";
  const reporter = createPlainReporter({ write: (chunk: string) => (text += chunk) }, options);
  for (const event of events) reporter.onEvent(event);
  return reporter.close().then(() => text);
}

function outputRun(lines: number): RunEvent[] {
  return buildEvents([
    { type: "iteration.started", iteration: 1, task: null },
    { type: "phase.started", iteration: 1, phase: "build", attempt: 1, kind: "run", dir: "0001-build", command: "make" },
    ...Array.from({ length: lines }, (_unused, i) => ({ type: "phase.output" as const, phase: "build", stream: "stdout" as const, line: `line ${i + 1}` })),
    { type: "phase.finished", iteration: 1, phase: "build", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 1000, tokens: 0, cost_usd: 0, output: {}, changes: [] },
  ]);
}

describe("createPlainReporter", () => {
  it("prints a sample run as pinned", async () => {
    const text = await collect(sampleRun(), { color: false, utc: true });
    await expect(text).toMatchFileSnapshot("goldens/plain-sample-run.txt");
  });

  it("prints a sample run in colour as pinned", async () => {
    const text = await collect(sampleRun(), { color: true, utc: true });
    await expect(text).toMatchFileSnapshot("goldens/plain-sample-run.color.txt");
  });

  it("shows every output line of a short phase", async () => {
    const text = await collect(outputRun(5), { color: false, utc: true, outputHead: 3, outputTail: 3 });
    for (let i = 1; i <= 5; i++) expect(text).toContain(`│ line ${i}\n`);
    expect(text).not.toContain("not shown");
  });

  it("caps a long phase's output to its first and last lines and points at the phase logs", async () => {
    const text = await collect(outputRun(100), { color: false, utc: true, outputHead: 3, outputTail: 2 });
    const shown = text.split("\n").filter((l) => /│ line \d+$/.test(l)).map((l) => l.replace(/.*│ /, ""));
    expect(shown).toEqual(["line 1", "line 2", "line 3", "line 99", "line 100"]);
    expect(text).toContain("│ … 95 lines not shown (full output in .phaseloop/runs/20261101-120400-ab12/phases/0001-build/)");
    // The tail comes before the phase's own end line.
    expect(text.indexOf("line 100")).toBeLessThan(text.indexOf("build succeeded"));
  });

  it("counts the lines the runner left out of a flood among those not shown", async () => {
    const events = outputRun(30);
    const last = events.findLastIndex((e) => e.type === "phase.output");
    events[last] = { ...events[last]!, dropped: 1000 } as RunEvent;
    const text = await collect(events, { color: false, utc: true, outputHead: 2, outputTail: 2 });
    expect(text).toContain("1,026 lines not shown");
    expect(text).toContain("│ line 30");
  });

  it("flushes a pending output tail when closed mid-phase", async () => {
    const events = outputRun(30).slice(0, -1);
    const text = await collect(events, { color: false, outputHead: 2, outputTail: 2 });
    expect(text).toContain("│ line 30");
    expect(text).toContain("26 lines not shown");
  });
});
