import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeTasks, formatTaskTable, taskSlug } from "../../src/machine/describe-tasks.ts";
import { machineForTask } from "../../src/run/single-task.ts";
import { compile, Driver, task } from "./helpers.ts";

const queueArb = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc.tuple(
    ...Array.from({ length: n }, (_, i) =>
      fc.record({
        prio: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
        // dependencies on earlier tasks (no cycles), or on one that does not exist
        deps: fc.subarray([...Array.from({ length: i }, (_, j) => `t${j}`), "missing"], { maxLength: Math.min(2, i + 1) }),
        state: fc.constantFrom("pending", "pending", "done", "blocked"),
      }),
    ),
  ),
);

const machine = compile({
  tasks: { source: { glob: "tasks/*.md" } },
  phases: { work: { run: "work", next: [{ if: "exit_code == 0", task: "done" }] } },
  stop: { max_iterations: 5 },
});

describe("describeTasks", () => {
  it("names as ready exactly the task the queue would start first, and agrees with it on blocked dependents", () => {
    fc.assert(
      fc.property(queueArb, (queue) => {
        const items = queue.map((q, i) => task(`t${i}`, { priority: q.prio, depends_on: q.deps, done: q.state === "done", blocked: q.state === "blocked" }));
        const frozen = JSON.stringify(items);
        const rows = describeTasks(items, "priority");
        expect(JSON.stringify(items)).toBe(frozen);
        const d = new Driver(machine);
        d.startRun(items);
        const first = rows.find((r) => r.ready);
        expect(d.snapshot.currentTask ?? undefined).toBe(first?.id);
        for (const row of rows) expect(row.status).toBe(d.snapshot.tasks!.find((t) => t.id === row.id)!.status);
        // every ready task is one the queue could start on its own (`run --task`)
        for (const row of rows.filter((r) => r.ready)) {
          const alone = new Driver(machineForTask(machine, row.id));
          alone.startRun(items);
          expect(alone.snapshot.currentTask).toBe(row.id);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("makes slugs safe for branch and artifact names", () => {
    fc.assert(
      fc.property(fc.string(), (id) => {
        const slug = taskSlug(id);
        expect(slug).toMatch(/^[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?(\+[0-9a-f]*)?$/);
        expect(slug).not.toContain("..");
      }),
    );
    expect(taskSlug("us-001")).toBe("us-001");
    expect(taskSlug("US-001")).toBe("US-001");
    expect(taskSlug("Fix the Login!")).toMatch(/^Fix-the-Login\+[0-9a-f]+$/);
  });

  it("gives distinct ids distinct slugs (a task file may hold ids that differ by case or punctuation)", () => {
    fc.assert(fc.property(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), (a, b) => a === b || taskSlug(a) !== taskSlug(b)), { numRuns: 2000 });
    expect(taskSlug("a b")).not.toBe(taskSlug("a-b"));
    expect(taskSlug("a.lock")).not.toBe("a.lock");
  });

  it("prints a table with a header and a dash for no priority or dependencies", () => {
    const rows = describeTasks([task("a", { title: "First" }), task("b", { title: "Second", depends_on: ["a"], priority: 1 })], "file");
    expect(formatTaskTable(rows)).toBe(["ID  PRIORITY  STATUS   DEPENDS ON  TITLE", "a   -         ready    -           First", "b   1         waiting  a           Second", ""].join("\n"));
  });
});
