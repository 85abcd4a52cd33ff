import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonValue } from "../../src/pipeline/spec.ts";
import { compile, Driver } from "./helpers.ts";

/**
 * Model-based test of the precedence after a phase: the phase's own stop, then
 * stop.when, then the token budget, then consecutive_failures, then the
 * phase's own breaker, then max_iterations at the loop head. Phase `a` retries
 * transient failures once (budgets still apply while it waits); `b` completes
 * on `done`. Every breaker must trip exactly at its threshold.
 */
interface Limits {
  max: number;
  cf: number;
  pf: number;
  budget: number;
}
interface Model {
  phase: "a" | "b";
  attempt: number;
  iteration: number;
  tokens: number;
  cf: number;
  pfA: number;
  aHalt: boolean;
  stopped: string | null;
  limits: Limits;
}
interface R {
  error: null | "exit_nonzero" | "transient";
  tokens: number;
  done: boolean;
  halt: boolean;
}

function step(m: Model, r: R): void {
  m.tokens += r.tokens;
  if (m.phase === "a" && r.error === "transient" && m.attempt < 2) {
    if (m.tokens >= m.limits.budget) m.stopped = "stopped:budget_tokens";
    else m.attempt = 2;
    return;
  }
  const phase = m.phase;
  m.attempt = 1;
  if (r.error === null) {
    m.cf = 0;
    if (phase === "a") m.pfA = 0;
  } else if (r.error !== "transient") {
    m.cf += 1;
    if (phase === "a") m.pfA += 1;
  }
  if (phase === "a") m.aHalt = r.error === null && !r.done && r.halt;
  if (phase === "b" && r.error === null && r.done) return void (m.stopped = "complete:transition");
  if (m.aHalt) return void (m.stopped = "failed:stop_rule");
  if (m.tokens >= m.limits.budget) return void (m.stopped = "stopped:budget_tokens");
  if (m.cf >= m.limits.cf) return void (m.stopped = "stopped:consecutive_failures");
  if (phase === "a" && m.pfA >= m.limits.pf) return void (m.stopped = "stopped:phase_failures");
  if (phase === "a") return void (m.phase = "b");
  if (m.iteration >= m.limits.max) return void (m.stopped = "stopped:max_iterations");
  m.iteration += 1;
  m.phase = "a";
}

class Finish implements fc.Command<Model, Driver> {
  readonly r: R;
  constructor(r: R) {
    this.r = r;
  }
  check(m: Readonly<Model>): boolean {
    return m.stopped === null;
  }
  run(m: Model, d: Driver): void {
    const r = this.r;
    const output: Record<string, JsonValue> = r.error === null ? { v: r.done ? "done" : r.halt ? "halt" : "more" } : {};
    const at = d.at + 10;
    d.at = at;
    const running = d.running!;
    d.send({ type: "phase.finished", at, phase: running.phase, attempt: running.attempt, result: { exit_code: r.error ? 1 : 0, output, text: "", error: r.error, message: null, output_tail: "", tokens: r.tokens, cost_usd: 0, duration_ms: 1, changes: [], jitter: 0.3 } });
    step(m, r);
    const s = d.snapshot;
    if (s.awaiting?.kind === "retry") {
      expect(s.status).toBe("waiting");
      expect(s.awaiting.delayMs).toBe(1000);
      d.send({ type: "retry.fired", at });
    }
    expect(s.tokens).toBe(m.tokens);
    expect(s.iteration).toBeLessThanOrEqual(m.limits.max);
    if (m.stopped === null) {
      expect(s.status).not.toBe("done");
      expect(d.running).toEqual({ phase: m.phase, attempt: m.attempt });
      expect(d.snapshot.iteration).toBe(m.iteration);
      expect(s.counters.consecutiveFailures).toBe(m.cf);
      expect(s.counters.phaseFailures.a ?? 0).toBe(m.pfA);
    } else {
      expect(`${s.outcome?.outcome}:${s.outcome?.reason.code}`).toBe(m.stopped);
      if (s.outcome!.outcome === "complete") expect(s.outcome!.reason.code).toBe("transition");
    }
  }
  toString(): string {
    return JSON.stringify(this.r);
  }
}

const result = fc.record({
  error: fc.constantFrom<R["error"]>(null, null, "exit_nonzero", "transient"),
  tokens: fc.integer({ min: 0, max: 40 }),
  done: fc.boolean(),
  halt: fc.constantFrom(false, false, false, true),
});

describe("limits, budgets and breakers against a reference model", () => {
  it("applies them in the documented order, each exactly at its threshold", () => {
    fc.assert(
      fc.property(
        fc.record({ max: fc.integer({ min: 1, max: 6 }), cf: fc.integer({ min: 1, max: 5 }), pf: fc.integer({ min: 1, max: 4 }), budget: fc.integer({ min: 1, max: 400 }) }),
        fc.commands([result.map((r) => new Finish(r))], { maxCommands: 50 }),
        (limits, cmds) => {
          const machine = compile({
            phases: {
              a: { run: "a", output: { v: { match: "(\\w+)" } }, retry: { max_attempts: 2, interval: "1s" }, consecutive_failures: limits.pf },
              b: { run: "b", retry: { max_attempts: 1 }, output: { v: { match: "(\\w+)" } }, next: [{ if: "output.v == 'done'", stop: "complete" }] },
            },
            stop: { max_iterations: limits.max, consecutive_failures: limits.cf, budget: { tokens: limits.budget }, when: [{ if: "phases.a.output.v == 'halt'", outcome: "failed" }] },
          });
          fc.modelRun(() => {
            const d = new Driver(machine);
            d.startRun();
            return { model: { phase: "a", attempt: 1, iteration: 1, tokens: 0, cf: 0, pfA: 0, aHalt: false, stopped: null, limits } satisfies Model as Model, real: d };
          }, cmds);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("continues identically after a JSON round trip of the snapshot at any step", () => {
    fc.assert(
      fc.property(fc.array(result, { minLength: 1, maxLength: 30 }), fc.nat(), (results, cut) => {
        const machine = compile({
          phases: { a: { run: "a", retry: { max_attempts: 2, interval: "1s", jitter: true } }, b: { run: "b", next: [{ if: "text == 'done'", stop: "complete" }] } },
          stop: { max_iterations: 5, consecutive_failures: 3, budget: { tokens: 300 } },
        });
        const play = (restoreAt: number | null) => {
          const d = new Driver(machine);
          d.startRun();
          results.forEach((r, i) => {
            if (i === restoreAt) d.snapshot = JSON.parse(JSON.stringify(d.snapshot));
            if (d.snapshot.status === "done") return;
            d.finish({ error: r.error, exit_code: r.error ? 1 : 0, tokens: r.tokens, text: r.done ? "done" : "", jitter: (r.tokens % 10) / 10 });
          });
          return { effects: d.effects, snapshot: d.snapshot };
        };
        expect(play(cut % results.length)).toEqual(play(null));
      }),
    );
  });
});
