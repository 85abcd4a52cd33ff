import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compile, Driver } from "./helpers.ts";

/**
 * Model-based test of the stop logic: random sequences of phase results drive
 * the machine and a small reference model of the rules; they must agree on
 * every step.
 */
interface Model {
  iteration: number;
  phase: "work" | "check";
  attempt: number;
  consecutiveFailures: number;
  noProgress: number;
  changedThisIteration: boolean;
  stopped: string | null;
  limits: { max: number; noProgress: number; failures: number };
}

type Outcome = { error: null | "exit_nonzero" | "transient" | "timeout"; changed: boolean; done: boolean };

function modelStep(m: Model, r: Outcome): void {
  if (r.changed) m.changedThisIteration = true;
  if (r.error === "transient" && m.attempt < 3) {
    m.attempt += 1;
    return;
  }
  m.attempt = 1;
  const failed = r.error !== null;
  if (failed && r.error !== "transient") m.consecutiveFailures += 1;
  else if (!failed) m.consecutiveFailures = 0;
  if (m.phase === "check" && !failed && r.done) {
    m.stopped = "complete:transition";
    return;
  }
  if (m.consecutiveFailures >= m.limits.failures) {
    m.stopped = "stopped:consecutive_failures";
    return;
  }
  if (m.phase === "work") {
    m.phase = "check";
    return;
  }
  // check → work: the loop head, so the iteration ends
  m.noProgress = m.changedThisIteration ? 0 : m.noProgress + 1;
  m.changedThisIteration = false;
  if (m.noProgress >= m.limits.noProgress) {
    m.stopped = "stopped:no_progress";
    return;
  }
  if (m.iteration >= m.limits.max) {
    m.stopped = "stopped:max_iterations";
    return;
  }
  m.iteration += 1;
  m.phase = "work";
}

class PhaseResultCommand implements fc.Command<Model, Driver> {
  readonly r: Outcome;
  constructor(r: Outcome) {
    this.r = r;
  }
  check(m: Readonly<Model>): boolean {
    return m.stopped === null;
  }
  run(m: Model, d: Driver): void {
    const changedSoFar = m.changedThisIteration || this.r.changed;
    d.finish({
      error: this.r.error,
      exit_code: this.r.error === null ? 0 : this.r.error === "timeout" ? null : 1,
      output: this.r.error === null ? { verdict: this.r.done ? "done" : "more" } : {},
      changes: changedSoFar ? ["src/x.ts"] : [],
    });
    modelStep(m, this.r);
    const s = d.snapshot;
    expect(s.iteration).toBeLessThanOrEqual(m.limits.max);
    if (m.stopped === null) {
      expect(s.status).not.toBe("done");
      expect(s.iteration).toBe(m.iteration);
      expect(d.running).toEqual({ phase: m.phase, attempt: m.attempt });
      expect(s.counters.consecutiveFailures).toBe(m.consecutiveFailures);
    } else {
      expect(s.status).toBe("done");
      expect(`${s.outcome!.outcome}:${s.outcome!.reason.code}`).toBe(m.stopped);
      // complete only through the explicit rule, never from a limit
      if (s.outcome!.outcome === "complete") expect(s.outcome!.reason.code).toBe("transition");
    }
  }
  toString(): string {
    return `result(${JSON.stringify(this.r)})`;
  }
}

const outcome = fc.record({
  error: fc.constantFrom(null, null, null, "exit_nonzero", "transient", "timeout") as fc.Arbitrary<Outcome["error"]>,
  changed: fc.boolean(),
  done: fc.boolean(),
});

describe("the stop logic against a reference model", () => {
  it("agrees with the model on every step of random runs", () => {
    fc.assert(
      fc.property(
        fc.record({ max: fc.integer({ min: 1, max: 6 }), noProgress: fc.integer({ min: 1, max: 4 }), failures: fc.integer({ min: 1, max: 4 }) }),
        fc.commands([outcome.map((r) => new PhaseResultCommand(r))], { maxCommands: 60 }),
        (limits, cmds) => {
          const machine = compile({
            phases: {
              work: { run: "true" },
              check: {
                run: "true",
                output: { verdict: { match: "(done|more)" } },
                next: [{ if: "output.verdict == 'done'", stop: "complete" }, { goto: "work" }],
              },
            },
            stop: { max_iterations: limits.max, no_progress: limits.noProgress, consecutive_failures: limits.failures },
          });
          const setup = () => {
            const d = new Driver(machine);
            d.startRun();
            const model: Model = { iteration: 1, phase: "work", attempt: 1, consecutiveFailures: 0, noProgress: 0, changedThisIteration: false, stopped: null, limits };
            return { model, real: d };
          };
          fc.modelRun(setup, cmds);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never trips a breaker on transient failures, however many", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), (n) => {
        const machine = compile({
          phases: { work: { run: "true", next: [{ if: "exit_code == 0", stop: "complete" }] } },
          stop: { max_iterations: 100, consecutive_failures: 1, no_progress: 100 },
        });
        const d = new Driver(machine);
        d.startRun();
        for (let i = 0; i < n && d.snapshot.status !== "done"; i++) d.finish({ error: "transient", exit_code: 1 });
        expect(d.outcome?.reason.code ?? "running").not.toBe("consecutive_failures");
        expect(d.snapshot.counters.consecutiveFailures).toBe(0);
      }),
    );
  });
});
