import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildContext } from "../../src/machine/build-context.ts";
import { compile, Driver, task } from "./helpers.ts";

const reviewLoop = () =>
  compile({
    agents: { a: { command: ["true"] } },
    tools: { inspect: { read: ["**"], write: [".phaseloop/**"] } },
    phases: {
      execute: { run: "true" },
      review: {
        agent: "a",
        tools: "inspect",
        prompt: "review it",
        output: { verdict: { tag: "verdict", default: "REJECT" } },
        next: [{ if: "error == 'timeout'", goto: "execute" }, { if: "output.verdict == 'PASS'", stop: "complete" }, { goto: "execute" }],
      },
      after: { run: "true", next: [{ stop: "complete" }] },
    },
    stop: { max_iterations: 5 },
  } as never);

describe("a phase that broke its tool set decides nothing", () => {
  it("has no outputs, and only the rules that look at the failure apply; else back to the loop head", () => {
    const d = new Driver(reviewLoop());
    d.startRun();
    d.finish();
    expect(d.running?.phase).toBe("review");
    d.finish({ error: "policy_violation", message: "changed files outside the write scope: src/x.ts", output: { verdict: "PASS" } });
    expect(d.outcome).toBeNull();
    expect(d.snapshot.results.review).toMatchObject({ status: "failed", output: {}, message: "changed files outside the write scope: src/x.ts" });
    expect(d.snapshot.history[0]!.phases.review).toMatchObject({ output: {}, error: "policy_violation" });
    // not on to `after` (the next phase in file order), which would complete
    expect(d.snapshot.iteration).toBe(2);
    expect(d.running?.phase).toBe("execute");
  });

  it("still follows a rule written for the failure", () => {
    const m = reviewLoop();
    m.phases.find((p) => p.name === "review")!.rules.unshift(...compile({
      phases: { r: { run: "true", next: [{ if: "status == 'failed'", stop: "blocked", reason: "broke the rules" }] } },
      stop: { max_iterations: 1 },
    } as never).phases[0]!.rules);
    const d = new Driver(m);
    d.startRun();
    d.finish();
    d.finish({ error: "policy_violation", output: { verdict: "PASS" } });
    expect(d.outcome).toEqual({ outcome: "blocked", reason: { code: "transition", message: "broke the rules" } });
  });

  it("never passes a task, whatever it said", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }), (violations) => {
        const m = compile({
          agents: { a: { command: ["true"] } },
          tools: { t: { write: [".loop/**"] } },
          tasks: { source: { glob: "tasks/*.md" }, max_attempts: 10 },
          phases: { work: { run: "true" }, judge: { agent: "a", tools: "t", prompt: "judge it", output: { v: { tag: "v" } }, next: [{ if: "output.v == 'PASS'", task: "done", goto: "work" }, { goto: "work" }] } },
          stop: { max_iterations: 10 },
        } as never);
        const d = new Driver(m);
        d.startRun([task("t1")]);
        for (const violated of violations) {
          if (d.outcome) break;
          d.finish();
          d.finish(violated ? { error: "policy_violation", output: { v: "PASS" } } : { output: { v: "REJECT" } });
        }
        return d.snapshot.tasks!.every((t) => t.status !== "done");
      }),
    );
  });
});

describe("what loops carry between iterations", () => {
  it("offers every file changed so far with the iteration that last changed it, and each phase's failure and command", () => {
    const m = compile({ phases: { work: { run: "make {{ iteration }}" }, check: { run: "true" } }, stop: { max_iterations: 5 } } as never);
    const d = new Driver(m);
    d.startRun();
    d.finish({ changes: ["a.txt"], command: "make 1" });
    d.finish({ changes: ["a.txt", "b.txt"], error: "exit_nonzero", exit_code: 1, message: "exit code 1", command: "true" });
    d.finish({ changes: ["b.txt"], command: "make 2" });
    d.finish({ changes: ["b.txt"], command: "true" });
    const ctx = buildContext(m, d.snapshot);
    expect(ctx.files).toEqual({ "a.txt": 1, "b.txt": 2 });
    expect(Object.keys(ctx.files)).toEqual(["a.txt", "b.txt"]);
    expect(ctx.history[0]!.phases.check).toMatchObject({ status: "failed", message: "exit code 1", command: "true", denied: [] });
    expect(ctx.history[0]!.phases.work).toMatchObject({ status: "succeeded", message: null, command: "make 1" });
  });

  it("a command that renders empty fails its phase instead of passing", () => {
    const m = compile({ params: { verify: { type: "string", default: "" } }, phases: { verify: { run: ["sh", "-c", "{{ params.verify }}"], next: [{ if: "exit_code == 0", stop: "complete" }] } }, stop: { max_iterations: 1 } } as never);
    const d = new Driver(m);
    d.startRun();
    expect(d.outcome?.outcome).toBe("stopped");
    expect(d.snapshot.history[0]!.phases.verify).toMatchObject({ status: "failed", error: "spawn_error" });
  });

  it("leaves a prompt that reads files for the runner to render", () => {
    const m = compile({ agents: { a: { command: ["true"] } }, phases: { work: { agent: "a", prompt: "{{ file('TASK.md') }}\nnow", next: [{ stop: "complete" }] } }, stop: { max_iterations: 1 } } as never);
    const d = new Driver(m);
    const fx = d.startRun();
    expect(fx.find((e) => e.type === "phase.run")).toMatchObject({ prompt: undefined, promptReadsFiles: true });
  });
});
