import { describe, expect, it } from "vitest";
import { formatCost, formatCount, formatDelay, formatDuration, formatEventLine, formatList } from "../../src/run/format-event-line.ts";
import { buildEvents, sampleRun } from "../reporters/synthetic-run.ts";

describe("formatDuration", () => {
  it("shows tenths of a second under a minute", () => {
    expect(formatDuration(0)).toBe("0.0s");
    expect(formatDuration(4100)).toBe("4.1s");
    expect(formatDuration(59_940)).toBe("59.9s");
  });

  it("switches to minutes and hours with padded parts", () => {
    expect(formatDuration(59_960)).toBe("1m00s");
    expect(formatDuration(302_000)).toBe("5m02s");
    expect(formatDuration(3_900_000)).toBe("1h05m");
  });

  it("treats a negative or non-finite duration as zero", () => {
    expect(formatDuration(-5)).toBe("0.0s");
    expect(formatDuration(Number.NaN)).toBe("0.0s");
  });
});

describe("formatDelay", () => {
  it("writes delays the way pipelines spell them", () => {
    expect(formatDelay(250)).toBe("250ms");
    expect(formatDelay(20_000)).toBe("20s");
    expect(formatDelay(90_000)).toBe("1m30s");
    expect(formatDelay(120_000)).toBe("2m");
    expect(formatDelay(3_600_000)).toBe("1h");
  });
});

describe("formatCount and formatCost", () => {
  it("groups thousands whatever the locale", () => {
    expect(formatCount(0)).toBe("0");
    expect(formatCount(1200)).toBe("1,200");
    expect(formatCount(1_234_567)).toBe("1,234,567");
    expect(formatCount(-4200)).toBe("-4,200");
  });

  it("prints cents, and sub-cent costs with four decimals", () => {
    expect(formatCost(0.02)).toBe("$0.02");
    expect(formatCost(12.4)).toBe("$12.40");
    expect(formatCost(1234.5)).toBe("$1,234.50");
    expect(formatCost(0.0042)).toBe("$0.0042");
    expect(formatCost(0)).toBe("$0.00");
  });
});

describe("formatList", () => {
  it("caps a long list with a count of the rest", () => {
    expect(formatList(["a", "b"])).toBe("a, b");
    expect(formatList(["a", "b", "c", "d", "e", "f", "g"], 3)).toBe("a, b, c and 4 more");
  });
});

describe("formatEventLine", () => {
  it("prints a time stamp, the iteration and the phase for a phase start", () => {
    const [event] = buildEvents([{ type: "phase.started", iteration: 2, phase: "step", attempt: 1, kind: "agent", dir: "0003-step", command: ["agent"] }], "r1", Date.UTC(2026, 0, 1, 12, 4, 5));
    expect(formatEventLine(event!, { color: false, utc: true })).toBe("12:04:05 iteration 2 · step started (attempt 1)");
  });

  it("prints the duration, tokens and cost of a finished phase", () => {
    const [event] = buildEvents(
      [{ type: "phase.finished", iteration: 2, phase: "step", attempt: 1, status: "succeeded", error: null, message: null, exit_code: 0, duration_ms: 4100, tokens: 1200, cost_usd: 0.02, output: {}, changes: [] }],
      "r1",
      Date.UTC(2026, 0, 1, 12, 4, 9),
    );
    expect(formatEventLine(event!, { color: false, utc: true })).toBe("12:04:09 iteration 2 · step succeeded in 4.1s · 1,200 tokens · $0.02");
  });

  it("names the error class and message of a retry", () => {
    const [event] = buildEvents([{ type: "phase.retry", phase: "step", attempt: 2, delay_ms: 20_000, error: "transient", message: "HTTP 503" }]);
    expect(formatEventLine(event!, { color: false, utc: true })).toContain("retrying in 20s (transient: HTTP 503)");
  });

  it("adds ANSI colour only when asked", () => {
    for (const event of sampleRun()) {
      expect(formatEventLine(event, { color: false })).not.toMatch(/\u001b\[/);
    }
    const finished = sampleRun().find((e) => e.type === "run.finished")!;
    expect(formatEventLine(finished, { color: true })).toMatch(/\u001b\[/);
  });

  it("keeps every event on one line", () => {
    for (const event of sampleRun()) {
      expect(formatEventLine(event, { color: false }).includes("\n")).toBe(false);
    }
  });
});
