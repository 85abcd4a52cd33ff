import { describe, expect, it } from "vitest";
import { buildContext } from "../../src/machine/build-context.ts";
import { initialSnapshot } from "../../src/machine/transition.ts";
import { compile, Driver, task } from "./helpers.ts";

const machine = () =>
  compile({
    params: { goal: { type: "string", default: "ship" } },
    phases: {
      plan: { run: "echo plan", output: { step: { match: "step=(\\w+)" } } },
      work: { run: "echo {{ env.TOKEN }}", next: [{ if: "exit_code == 0", task: "done", goto: "plan" }] },
    },
    tasks: { source: { glob: "tasks/*.md" } },
    stop: { max_iterations: 5 },
  });

describe("building the iteration context", () => {
  it("starts with every phase pending and no task", () => {
    const m = machine();
    const s = initialSnapshot(m, { runId: "r9", params: { goal: "ship" }, env: { TOKEN: "t" }, pipeline: { name: "t", file: "/p/t.yaml", dir: "/p" }, workdir: "/w" });
    const c = buildContext(m, s);
    expect(Object.keys(c.phases)).toEqual(["plan", "work"]);
    expect(c.phases.plan!.status).toBe("pending");
    expect(c).toMatchObject({ iteration: 0, params: { goal: "ship" }, status: "pending", task: null, history: [], last_failure: null, changes: [], env: { TOKEN: "t" }, workdir: "/w" });
    expect(c.run).toEqual({ id: "r9", tokens: 0, cost_usd: 0, elapsed_ms: 0, artifacts: "/w/.phaseloop/runs/r9/artifacts" });
    expect(c.pipeline).toEqual({ name: "t", file: "/p/t.yaml", dir: "/p" });
    expect(c.tasks).toEqual({ total: 0, done: 0, blocked: 0, pending: 0, items: [] });
  });

  it("shows a phase's own result bare, earlier results by name, the task and the queue", () => {
    const d = new Driver(machine());
    d.startRun([task("t1", { title: "first" }), task("t2")]);
    d.finish({ output: { step: "one" }, text: "planned", tokens: 12, changes: ["a.ts"] });
    const during = buildContext(d.machine, d.snapshot);
    expect(during.phases.plan).toMatchObject({ status: "succeeded", output: { step: "one" }, text: "planned", iteration: 1, attempts: 1 });
    expect(during.task).toMatchObject({ id: "t1", title: "first", status: "pending" });
    expect(during.changes).toEqual(["a.ts"]);
    expect(during.run.tokens).toBe(12);
    const own = buildContext(d.machine, d.snapshot, "plan");
    expect(own).toMatchObject({ status: "succeeded", output: { step: "one" }, text: "planned", exit_code: 0 });
    d.finish({ exit_code: 1, error: "exit_nonzero", output_tail: "boom", message: "exit 1", changes: ["a.ts"] });
    const after = buildContext(d.machine, d.snapshot);
    expect(after.iteration).toBe(2);
    expect(after.last_failure).toEqual({ phase: "work", iteration: 1, error: "exit_nonzero", exit_code: 1, output_tail: "boom", message: "exit 1" });
    expect(after.history).toHaveLength(1);
    expect(after.history[0]).toMatchObject({ iteration: 1, task: "t1", changes: ["a.ts"], phases: { plan: { status: "succeeded", output: { step: "one" }, text_tail: "planned" }, work: { status: "failed", error: "exit_nonzero" } } });
    expect(after.tasks).toMatchObject({ total: 2, done: 0, pending: 2 });
    expect(after.task?.attempts).toBe(1);
  });

  it("is the context phase.run carries, so the runtime renders with the same values", () => {
    const d = new Driver(machine());
    const fx = d.startRun([task("t1")]);
    const run = fx.find((e) => e.type === "phase.run");
    expect(run?.type === "phase.run" && run.context).toEqual(JSON.parse(JSON.stringify(buildContext(d.machine, d.snapshot))));
  });
});
