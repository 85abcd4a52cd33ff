import { describe, expect, it } from "vitest";
import { EventLineSplitter } from "../../src/records/run-log.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import { sampleRun } from "../reporters/synthetic-run.ts";

const encoder = new TextEncoder();

describe("EventLineSplitter", () => {
  it("yields the same events whatever the chunk boundaries, multi-byte characters included", () => {
    const events = sampleRun().map((e) => (e.type === "note" ? { ...e, message: "budget 80 % used — ünïcödé 🚀" } : e));
    const bytes = encoder.encode(events.map((e) => `${JSON.stringify(e)}\n`).join(""));
    for (const size of [1, 2, 3, 7, 64, 1000, bytes.length]) {
      const splitter = new EventLineSplitter();
      const seen: RunEvent[] = [];
      for (let i = 0; i < bytes.length; i += size) splitter.push(bytes.subarray(i, i + size), (e) => seen.push(e));
      expect(splitter.end((e) => seen.push(e))).toEqual({ torn: false });
      expect(seen).toEqual(events);
    }
  });

  it("uses a whole last line without its newline", () => {
    const [event] = sampleRun();
    const splitter = new EventLineSplitter();
    const seen: RunEvent[] = [];
    splitter.push(encoder.encode(JSON.stringify(event)), (e) => seen.push(e));
    expect(seen).toEqual([]);
    expect(splitter.end((e) => seen.push(e))).toEqual({ torn: false });
    expect(seen).toEqual([event]);
  });

  it("reports a torn last line and counts garbage lines in the middle", () => {
    const [a, b] = sampleRun();
    const splitter = new EventLineSplitter();
    const seen: RunEvent[] = [];
    splitter.push(encoder.encode(`${JSON.stringify(a)}\nnot json\n[1,2]\n\n${JSON.stringify(b)}\n{"v":1,"ty`), (e) => seen.push(e));
    expect(splitter.end((e) => seen.push(e))).toEqual({ torn: true });
    expect(seen).toEqual([a, b]);
    expect(splitter.malformed).toBe(2);
  });
});
