import { describe, expect, it } from "vitest";
import type { EventInput } from "../../src/run/event-log.ts";
import { LiveOutput } from "../../src/run/live-output.ts";

const collect = () => {
  const events: EventInput[] = [];
  return { events, emit: (e: EventInput) => void events.push(e) };
};

describe("LiveOutput", () => {
  it("reports every line of a phase that prints at a readable pace", () => {
    const { events, emit } = collect();
    const live = new LiveOutput(emit, "build");
    for (let i = 0; i < 200; i++) live.push(i % 2 ? "stderr" : "stdout", `line ${i}`);
    live.end();
    expect(events.map((e) => e.line)).toEqual(Array.from({ length: 200 }, (_, i) => `line ${i}`));
    expect(events.every((e) => e.type === "phase.output" && e.phase === "build" && e.dropped === undefined)).toBe(true);
    expect(events[1]!.stream).toBe("stderr");
  });

  it("leaves lines out of a flood, says how many, and always reports the last ones", () => {
    const { events, emit } = collect();
    const live = new LiveOutput(emit, "flood");
    const n = 50_000;
    for (let i = 0; i < n; i++) live.push("stdout", `line ${i}`);
    live.end();
    // in order, none twice, and every line either reported or counted as left out
    const numbers = events.map((e) => Number(String(e.line).slice(5)));
    for (let i = 1; i < numbers.length; i++) expect(numbers[i]).toBeGreaterThan(numbers[i - 1]!);
    const dropped = events.reduce((sum, e) => sum + ((e.dropped as number | undefined) ?? 0), 0);
    expect(events.length + dropped).toBe(n);
    expect(events.length).toBeLessThan(n);
    expect(numbers.slice(0, 1000)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(numbers.slice(-10)).toEqual(Array.from({ length: 10 }, (_, i) => n - 10 + i));
  });
});
