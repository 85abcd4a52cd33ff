import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { blockDependents, laneLimits, laneMachine, queueState, readyTasks, sharedLimitReached } from "../../src/lanes/schedule-lanes.ts";
import type { Machine, Snapshot, TaskState } from "../../src/machine/types.ts";

function task(id: string, order: number, depends_on: string[] = [], over: Partial<TaskState> = {}): TaskState {
  return { id, title: id, body: "", status: "pending", attempts: 0, priority: null, depends_on, notes: [], order, reason: null, ...over };
}

/** A queue without cycles: each task may depend on earlier ones (and now and then on one that does not exist). */
const queueArb = fc.integer({ min: 1, max: 9 }).chain((n) =>
  fc.tuple(
    ...Array.from({ length: n }, (_, i) =>
      fc.record({
        deps: fc.subarray(Array.from({ length: i }, (_, j) => `t${j}`)),
        missing: fc.boolean().map((b) => (b && i % 5 === 4 ? ["nope"] : [])),
        priority: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
      }),
    ),
  ).map((specs) => specs.map((s, i) => task(`t${i}`, i, [...s.deps, ...s.missing], { priority: s.priority }))),
);

describe("lane scheduling", () => {
  it("starts nothing beyond the free lanes, nothing twice, and nothing whose dependencies are not all done", () => {
    fc.assert(
      fc.property(queueArb, fc.integer({ min: 1, max: 5 }), fc.array(fc.nat(), { maxLength: 3 }), fc.constantFrom("priority" as const, "file" as const), (tasks, parallel, doneIdx, order) => {
        for (const i of doneIdx) if (tasks[i % tasks.length]) tasks[i % tasks.length]!.status = "done";
        const running = tasks.filter((t) => t.status === "pending").slice(0, 1).map((t) => t.id);
        const ready = readyTasks({ tasks, running, parallel, order });
        expect(ready.length).toBeLessThanOrEqual(Math.max(0, parallel - running.length));
        expect(new Set(ready).size).toBe(ready.length);
        const byId = new Map(tasks.map((t) => [t.id, t]));
        for (const id of ready) {
          expect(running).not.toContain(id);
          expect(byId.get(id)!.status).toBe("pending");
          for (const d of byId.get(id)!.depends_on) expect(byId.get(d)?.status).toBe("done");
        }
      }),
    );
  });

  it("runs any queue to its end: at most N at once, each task after its dependencies, every task done unless a missing dependency blocks it", () => {
    fc.assert(
      fc.property(queueArb, fc.integer({ min: 1, max: 4 }), fc.array(fc.nat(), { minLength: 30, maxLength: 30 }), (initial, parallel, picks) => {
        let tasks = initial;
        const running: string[] = [];
        const finished: string[] = [];
        for (let step = 0; step < 200; step++) {
          const b = blockDependents(tasks);
          tasks = b.tasks;
          const ready = readyTasks({ tasks, running, parallel, order: "priority" });
          running.push(...ready);
          expect(running.length).toBeLessThanOrEqual(parallel);
          const state = queueState({ tasks, running, parallel, order: "priority" });
          if (state.kind !== "working") break;
          // a lane ends, in an order the test picks: its task is merged (done)
          const idx = picks[step % picks.length]! % running.length;
          const id = running.splice(idx, 1)[0]!;
          const t = tasks.find((x) => x.id === id)!;
          for (const d of t.depends_on) expect(finished).toContain(d);
          t.status = "done";
          finished.push(id);
        }
        const end = queueState({ tasks, running, parallel, order: "priority" });
        for (const t of tasks) {
          if (t.status === "blocked") expect(t.reason).toMatch(/dependency/);
          else expect(t.status).toBe("done");
        }
        expect(end.kind).toBe(tasks.some((t) => t.status === "blocked") ? "blocked" : "all-done");
      }),
    );
  });

  it("does not change the tasks it is given", () => {
    const tasks = [task("a", 0, ["missing"]), task("b", 1, ["a"])];
    const copy = structuredClone(tasks);
    const r = blockDependents(tasks);
    expect(tasks).toEqual(copy);
    expect(r.blocked.map((b) => b.task)).toEqual(["a", "b"]);
  });

  it("takes tasks by priority, then source order", () => {
    const tasks = [task("a", 0, [], { priority: 2 }), task("b", 1, [], { priority: 1 }), task("c", 2)];
    expect(readyTasks({ tasks, running: [], parallel: 2, order: "priority" })).toEqual(["b", "a"]);
    expect(readyTasks({ tasks, running: [], parallel: 2, order: "file" })).toEqual(["a", "b"]);
  });

  it("stops every lane on a run-wide limit exactly when a total reaches it", () => {
    fc.assert(
      fc.property(
        fc.record({ maxDurationMs: fc.option(fc.nat({ max: 1000 }), { nil: null }), budgetTokens: fc.option(fc.nat({ max: 1000 }), { nil: null }), budgetCostUsd: fc.option(fc.double({ min: 0, max: 10, noNaN: true }), { nil: null }) }),
        fc.record({ tokens: fc.nat({ max: 1000 }), costUsd: fc.double({ min: 0, max: 10, noNaN: true }), elapsedMs: fc.nat({ max: 1000 }) }),
        (limits, totals) => {
          const reached = sharedLimitReached(limits, totals);
          const expected = (limits.budgetTokens !== null && totals.tokens >= limits.budgetTokens) || (limits.budgetCostUsd !== null && totals.costUsd >= limits.budgetCostUsd) || (limits.maxDurationMs !== null && totals.elapsedMs >= limits.maxDurationMs);
          expect(reached !== null).toBe(expected);
        },
      ),
    );
  });

  it("leaves a lane its own iterations and breakers, and the shared limits to the run", () => {
    const limits: Snapshot["limits"] = { maxIterations: 9, maxDurationMs: 1000, noProgress: 2, consecutiveFailures: 3, budgetTokens: 10, budgetCostUsd: 1, taskAttempts: 4 };
    expect(laneLimits(limits)).toEqual({ maxIterations: 9, maxDurationMs: null, noProgress: 2, consecutiveFailures: 3, budgetTokens: null, budgetCostUsd: null, taskAttempts: 4 });
    const m = { tasks: { source: { kind: "glob", glob: "t/*.md" }, maxAttempts: 3, order: "priority", finalGate: "gate", parallel: 4 }, limits: { maxIterations: 5, maxDurationMs: 9, noProgress: 2, consecutiveFailures: 2, budgetTokens: 1, budgetCostUsd: 1 }, hooks: { on_complete: {}, before_iteration: {} } } as unknown as Machine;
    const lane = laneMachine(m);
    expect(lane.tasks?.finalGate).toBeUndefined();
    expect(lane.limits).toMatchObject({ maxDurationMs: null, budgetTokens: null, budgetCostUsd: null, noProgress: 2, consecutiveFailures: 2 });
    expect(Object.keys(lane.hooks).filter((k) => lane.hooks[k as "on_complete"])).toEqual(["before_iteration"]);
  });
});
