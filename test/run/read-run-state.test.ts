import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkEvent } from "../../src/run/check-run-state.ts";
import { repairTornTail, scanEventLog, scanIterationLog } from "../../src/run/read-run-state.ts";

const at = "2026-01-01T00:00:00.000Z";
const event = (seq: number, type = "note") => JSON.stringify({ v: 1, seq, at, run: "r", type, level: "info", message: `event ${seq}` });

function runDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-state-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

describe("reading the event log back", () => {
  it("a torn last line is found, and cut off by the repair", () => {
    const dir = runDir({ "events.jsonl": `${event(1)}\n${event(2)}\n{"v":1,"seq":3,"at` });
    const scan = scanEventLog(dir, "r");
    expect(scan.ok && scan.value).toMatchObject({ lines: 2, lastSeq: 2, needsNewline: false });
    expect(scan.ok && scan.value.tornBytes).toBeGreaterThan(0);
    if (scan.ok) repairTornTail(join(dir, "events.jsonl"), scan.value);
    expect(readFileSync(join(dir, "events.jsonl"), "utf8")).toBe(`${event(1)}\n${event(2)}\n`);
  });

  it("a whole last line without its newline is kept and ended", () => {
    const dir = runDir({ "events.jsonl": `${event(1)}\n${event(2)}` });
    const scan = scanEventLog(dir, "r");
    expect(scan.ok && scan.value).toMatchObject({ lines: 2, lastSeq: 2, needsNewline: true, tornBytes: 0 });
    if (scan.ok) repairTornTail(join(dir, "events.jsonl"), scan.value);
    expect(readFileSync(join(dir, "events.jsonl"), "utf8")).toBe(`${event(1)}\n${event(2)}\n`);
  });

  it("a bad line in the middle is a problem with its line, unless reading leniently", () => {
    const dir = runDir({ "events.jsonl": `${event(1)}\nnot json\n${event(3)}\n` });
    const strict = scanEventLog(dir, "r");
    expect(strict.ok).toBe(false);
    if (!strict.ok) expect(strict.problem).toMatchObject({ line: 2, message: "the line is not valid JSON" });
    const lenient = scanEventLog(dir, "r", true);
    expect(lenient.ok && lenient.value).toMatchObject({ lines: 2, skipped: 1, lastSeq: 3 });
  });

  it("seq must grow, and run.finished is noticed", () => {
    const dir = runDir({ "events.jsonl": `${event(1)}\n${event(1)}\n` });
    const scan = scanEventLog(dir, "r");
    expect(!scan.ok && scan.problem.message).toBe("seq: 1 does not follow 1");
    const done = runDir({ "events.jsonl": `${event(1)}\n${JSON.stringify({ v: 1, seq: 2, at, run: "r", type: "run.finished", outcome: "complete", reason: { code: "transition", message: "" }, exit_code: 0, iterations: 1, tokens: 0, cost_usd: 0, elapsed_ms: 5 })}\n` });
    const finished = scanEventLog(done, "r");
    expect(finished.ok && finished.value.finished).toBe(true);
  });

  it("iterations.jsonl yields the iterations it holds", () => {
    const dir = runDir({ "iterations.jsonl": `{"iteration":1}\n{"iteration":2}\n` });
    const scan = scanIterationLog(dir, "r");
    expect(scan.ok && [...scan.value.iterations]).toEqual([1, 2]);
  });
});

describe("an event's shape", () => {
  it("takes a whole event of a known type and a minimal one of an unknown type", () => {
    expect(checkEvent(JSON.parse(event(1)), "")).toBeUndefined();
    expect(checkEvent({ v: 1, seq: 4, at, run: "r", type: "some.future.event", whatever: [1] }, "")).toBeUndefined();
  });

  it("names the field of the wrong kind", () => {
    expect(checkEvent({ v: 1, seq: 4, at, run: "r", type: "iteration.finished", iteration: 2, changes: "a.txt", task: null }, "")).toBe('changes: expected a list, found the string "a.txt"');
    expect(checkEvent({ v: 1, seq: -1, at, run: "r", type: "note", level: "info", message: "" }, "")).toBe("seq: expected a whole number of at least 0, found the number -1");
  });
});
