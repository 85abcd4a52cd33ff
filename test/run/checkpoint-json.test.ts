import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkpointJson, type Checkpoint } from "../../src/run/checkpoint.ts";

/** A checkpoint whose snapshot, history and pending events hold arbitrary JSON, keys named `history` and strings that look like JSON included. */
const tricky = fc.oneof(fc.constant('"history":"x"'), fc.constant("history"), fc.constant('","history":['), fc.string());
const value = fc.oneof(fc.jsonValue(), tricky, fc.dictionary(fc.oneof(fc.constant("history"), fc.string()), fc.oneof(fc.jsonValue(), tricky)));
const entry = fc.record({ iteration: fc.nat(), phases: fc.dictionary(fc.string(), value), changes: fc.array(fc.string()), task: fc.option(fc.string()) });
const checkpoint = fc.record({
  before: fc.dictionary(fc.string(), value),
  history: fc.array(entry, { maxLength: 25 }),
  after: fc.dictionary(fc.string(), value),
  pending: fc.array(fc.dictionary(fc.oneof(fc.constant("history"), fc.string()), value), { maxLength: 4 }),
  seq: fc.nat(),
});

function build(c: { before: Record<string, unknown>; history: unknown[]; after: Record<string, unknown>; pending: unknown[]; seq: number }): Checkpoint {
  // the history stands among other keys, as in a snapshot
  const snapshot = { v: 1, ...c.before, history: c.history, ...c.after };
  return { snapshot, seq: c.seq, pending: c.pending, updated_at: "2026-11-23T00:00:00.000Z" } as unknown as Checkpoint;
}

describe("checkpointJson", () => {
  it("is JSON.stringify's text, whatever the snapshot holds", () => {
    fc.assert(
      fc.property(checkpoint, (c) => {
        const cp = build(c);
        expect(checkpointJson(cp)).toBe(JSON.stringify(cp));
      }),
      { numRuns: 300 },
    );
  });

  it("stays right across checkpoints that share history entries, as a run's do", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 40 }), fc.dictionary(fc.string(), value), (entries, rest) => {
        let history: unknown[] = [];
        for (const e of entries) {
          // each transition copies the list and shares the entries, keeping the last twenty
          history = [...history, e].slice(-20);
          const cp = build({ before: rest, history, after: {}, pending: [], seq: 1 });
          expect(checkpointJson(cp)).toBe(JSON.stringify(cp));
        }
      }),
      { numRuns: 100 },
    );
  });

  it("parses back to the checkpoint", () => {
    const cp = build({ before: { status: "running" }, history: [{ iteration: 1, phases: { a: { note: '"history":"' } }, changes: ["x"], task: null }], after: { tokens: 3 }, pending: [{ history: "h" }], seq: 4 });
    expect(JSON.parse(checkpointJson(cp))).toEqual(cp);
  });
});
