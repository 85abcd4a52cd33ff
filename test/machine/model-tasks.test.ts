import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compile, Driver, task } from "./helpers.ts";

/**
 * Model-based test of the task queue: random queues (priorities, dependencies
 * on earlier tasks) worked by random verdicts, against a plain model of the
 * queue rules: selection at iteration start, one attempt per iteration not
 * marked done, blocked after max_attempts, dependents of a blocked task
 * blocked, and the run's end (complete only when every task is done).
 */
interface MTask {
  id: string;
  deps: string[];
  prio: number | null;
  status: "pending" | "done" | "blocked";
  attempts: number;
}
interface Model {
  tasks: MTask[];
  current: string | null;
  iteration: number;
  stopped: string | null;
  max: number;
  maxAttempts: number;
}
type Verdict = "done" | "blocked" | "more" | "fail";

function begin(m: Model): void {
  const byId = new Map(m.tasks.map((t) => [t.id, t]));
  for (let changed = true; changed; ) {
    changed = false;
    for (const t of m.tasks) {
      if (t.status === "pending" && t.deps.some((d) => byId.get(d)!.status === "blocked")) {
        t.status = "blocked";
        changed = true;
      }
    }
  }
  const ready = m.tasks
    .map((t, order) => ({ t, order }))
    .filter(({ t }) => t.status === "pending" && t.deps.every((d) => byId.get(d)!.status === "done"))
    .sort((a, b) => (a.t.prio ?? Infinity) - (b.t.prio ?? Infinity) || a.order - b.order);
  if (!ready[0]) {
    m.current = null;
    m.stopped = m.tasks.every((t) => t.status === "done") ? "complete:tasks_done" : "blocked:tasks_blocked";
    return;
  }
  if (m.iteration >= m.max) {
    m.current = null;
    m.stopped = "stopped:max_iterations";
    return;
  }
  m.iteration += 1;
  m.current = ready[0].t.id;
}

function step(m: Model, v: Verdict): void {
  const t = m.tasks.find((x) => x.id === m.current)!;
  if (v === "done") t.status = "done";
  if (v === "blocked") t.status = "blocked";
  if (t.status === "pending") {
    t.attempts += 1;
    if (t.attempts >= m.maxAttempts) t.status = "blocked";
  }
  begin(m);
}

class Work implements fc.Command<Model, Driver> {
  readonly v: Verdict;
  constructor(v: Verdict) {
    this.v = v;
  }
  check(m: Readonly<Model>): boolean {
    return m.stopped === null;
  }
  run(m: Model, d: Driver): void {
    d.finish(this.v === "fail" ? { exit_code: 1, error: "exit_nonzero" } : { output: { v: this.v } });
    step(m, this.v);
    compare(m, d);
  }
  toString(): string {
    return this.v;
  }
}

function compare(m: Model, d: Driver): void {
  const s = d.snapshot;
  expect(s.tasks!.map((t) => [t.id, t.status, t.attempts])).toEqual(m.tasks.map((t) => [t.id, t.status, t.attempts]));
  expect(s.iteration).toBe(m.iteration);
  expect(s.iteration).toBeLessThanOrEqual(m.max);
  if (m.stopped === null) {
    expect(s.currentTask).toBe(m.current);
    expect(d.running?.phase).toBe("work");
  } else {
    expect(`${s.outcome?.outcome}:${s.outcome?.reason.code}`).toBe(m.stopped);
    if (s.outcome!.outcome === "complete") expect(s.tasks!.every((t) => t.status === "done")).toBe(true);
  }
}

const queueArb = fc.integer({ min: 1, max: 5 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => fc.record({ prio: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }), deps: fc.subarray(Array.from({ length: i }, (_, j) => `t${j}`), { maxLength: Math.min(2, i) }) }))),
);

describe("the task queue against a reference model", () => {
  it("agrees with the model on every step of random queues and verdicts", () => {
    fc.assert(
      fc.property(
        queueArb,
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 12 }),
        fc.commands([fc.constantFrom<Verdict>("done", "done", "blocked", "more", "fail").map((v) => new Work(v))], { maxCommands: 40 }),
        (queue, maxAttempts, max, cmds) => {
          const machine = compile({
            tasks: { source: { glob: "tasks/*.md" }, max_attempts: maxAttempts },
            phases: {
              work: {
                run: "work",
                output: { v: { match: "(\\w+)" } },
                next: [
                  { if: "output.v == 'done'", task: "done" },
                  { if: "output.v == 'blocked'", task: "blocked" },
                ],
              },
            },
            stop: { max_iterations: max },
          });
          const items = queue.map((q, i) => task(`t${i}`, { priority: q.prio, depends_on: q.deps }));
          fc.modelRun(() => {
            const d = new Driver(machine);
            d.startRun(items);
            const model: Model = { tasks: items.map((t) => ({ id: t.id, deps: t.depends_on, prio: t.priority, status: "pending", attempts: 0 })), current: null, iteration: 0, stopped: null, max, maxAttempts };
            begin(model);
            compare(model, d);
            return { model, real: d };
          }, cmds);
        },
      ),
      { numRuns: 300 },
    );
  });
});
