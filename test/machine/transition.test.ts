import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { exitCodeFor } from "../../src/machine/transition.ts";
import { compile, Driver, task } from "./helpers.ts";

const loop = (stop: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  compile({
    phases: {
      execute: { run: "true" },
      verify: { run: "true", next: [{ if: "exit_code == 0", stop: "complete", reason: "verified" }, { goto: "execute" }] },
    },
    stop: { max_iterations: 3, ...stop },
    ...extra,
  } as never);

describe("iterations and transitions", () => {
  it("falls through in file order and starts a new iteration at the loop head", () => {
    const d = new Driver(loop({}));
    d.startRun();
    expect(d.running).toEqual({ phase: "execute", attempt: 1 });
    d.finish();
    expect(d.running).toEqual({ phase: "verify", attempt: 1 });
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.snapshot.iteration).toBe(2);
    expect(d.running?.phase).toBe("execute");
  });

  it("completes through an explicit stop with its reason, exit code 0", () => {
    const d = new Driver(loop({}));
    d.startRun();
    d.finish();
    d.finish();
    expect(d.outcome).toEqual({ outcome: "complete", reason: { code: "transition", message: "verified" } });
    expect(exitCodeFor("complete")).toBe(0);
  });

  it("stops with exit 3, not 0, after max_iterations without success (a seed exited 0)", () => {
    const d = new Driver(loop({ max_iterations: 2 }));
    d.startRun();
    for (let i = 0; i < 4; i++) d.finish(i % 2 ? { exit_code: 1, error: "exit_nonzero" } : {});
    expect(d.outcome?.outcome).toBe("stopped");
    expect(d.outcome?.reason.code).toBe("max_iterations");
    expect(exitCodeFor(d.outcome!.outcome)).toBe(3);
    expect(d.snapshot.iteration).toBe(2);
  });

  it("lets a complete on the last allowed iteration win over the limit", () => {
    const d = new Driver(loop({ max_iterations: 1 }));
    d.startRun();
    d.finish();
    d.finish();
    expect(d.outcome?.outcome).toBe("complete");
  });

  it("skips a phase whose when does not hold and falls through", () => {
    const m = compile({
      params: { skip: { type: "boolean", default: true } },
      phases: { a: { run: "true" }, b: { run: "true", when: "!params.skip" }, c: { run: "true", next: [{ stop: "complete" }] } },
      stop: { max_iterations: 2 },
    });
    const d = new Driver(m);
    d.startRun();
    const fx = d.finish();
    expect(fx.map((e) => e.type)).toContain("phase.skipped");
    expect(d.running?.phase).toBe("c");
    expect(d.snapshot.results.b?.status).toBe("skipped");
  });

  it("never short-circuits a phase: a generator's completion claim still goes through the evaluator (a seed skipped it)", () => {
    const m = compile({
      phases: {
        generate: { run: "true", output: { claim: { tag: "promise" } } },
        evaluate: { run: "true", output: { verdict: { tag: "verdict", default: "REJECT" } }, next: [{ if: "output.verdict == 'PASS'", stop: "complete" }, { goto: "generate" }] },
      },
      stop: { max_iterations: 3 },
    });
    const d = new Driver(m);
    d.startRun();
    d.finish({ output: { claim: "COMPLETE" } });
    expect(d.snapshot.status).not.toBe("done");
    expect(d.running?.phase).toBe("evaluate");
    d.finish({ output: { verdict: "REJECT" } });
    expect(d.running?.phase).toBe("generate");
  });

  it("renders prompts, and passes the values of run strings in environment variables", () => {
    const m = compile({
      params: { file: { type: "string", default: "a b'c.txt" } },
      agents: { w: { command: ["cat"] } },
      phases: { a: { agent: "w", prompt: "Work on {{ params.file }} in iteration {{ iteration }}." }, b: { run: "cat {{ params.file }}", next: [{ stop: "complete" }] } },
      stop: { max_iterations: 1 },
    });
    const d = new Driver(m);
    const fx = d.startRun();
    const run = fx.find((e) => e.type === "phase.run");
    expect(run && run.type === "phase.run" && run.prompt).toBe("Work on a b'c.txt in iteration 1.");
    const fx2 = d.finish();
    const run2 = fx2.find((e) => e.type === "phase.run");
    expect(run2 && run2.type === "phase.run" && [run2.command, run2.env.PHASELOOP_T1_file]).toEqual(['cat "${PHASELOOP_T1_file}"', "a b'c.txt"]);
  });
});

describe("breakers and limits", () => {
  it("no_progress counts the measured changes of each iteration, not the cumulative diff (a seed never tripped)", () => {
    const d = new Driver(loop({ max_iterations: 10, no_progress: 3 }));
    d.startRun();
    // iteration 1 changes a file; iterations 2-4 change nothing
    d.finish({ changes: ["src/a.ts"] });
    d.finish({ changes: ["src/a.ts"], exit_code: 1, error: "exit_nonzero" });
    for (let i = 0; i < 3 && d.snapshot.status !== "done"; i++) {
      d.finish({ changes: [] });
      d.finish({ changes: [], exit_code: 1, error: "exit_nonzero" });
    }
    expect(d.outcome?.reason.code).toBe("no_progress");
    expect(d.snapshot.iteration).toBe(4);
  });

  it("trips consecutive_failures exactly at its threshold", () => {
    const m = compile({ phases: { a: { run: "x", next: [{ if: "exit_code == 0", stop: "complete" }] } }, stop: { max_iterations: 20, consecutive_failures: 3 } });
    const d = new Driver(m);
    d.startRun();
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.snapshot.status).not.toBe("done");
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.outcome?.reason.code).toBe("consecutive_failures");
  });

  it("stops on the token and cost budgets", () => {
    const d = new Driver(loop({ max_iterations: 10, budget: { tokens: 100 } }));
    d.startRun();
    d.finish({ tokens: 60 });
    expect(d.snapshot.status).not.toBe("done");
    d.finish({ tokens: 60, exit_code: 1, error: "exit_nonzero" });
    expect(d.outcome?.reason.code).toBe("budget_tokens");
  });

  it("stops on max_duration, not counting time spent interrupted", () => {
    const d = new Driver(loop({ max_iterations: 10, max_duration: "1m" }));
    d.startRun();
    d.finish({}, 20_000);
    d.send({ type: "interrupted", at: d.at + 1, signal: "SIGINT" });
    d.at += 3_600_000;
    d.send({ type: "resumed", at: d.at });
    d.finish({ exit_code: 1, error: "exit_nonzero" }, 20_000);
    expect(d.snapshot.status).not.toBe("done");
    d.finish({}, 30_000);
    expect(d.outcome?.reason.code).toBe("max_duration");
  });

  it("applies stop.when rules after every phase", () => {
    const d = new Driver(loop({ max_iterations: 5, when: [{ if: "iteration >= 2 && phases.execute.status == 'succeeded'", outcome: "blocked", reason: "enough" }] }));
    d.startRun();
    d.finish();
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    d.finish();
    expect(d.outcome).toEqual({ outcome: "blocked", reason: { code: "stop_rule", message: "enough" } });
  });

  it("stops a phase that fails its own breaker", () => {
    const m = compile({ phases: { a: { run: "x", consecutive_failures: 2, next: [{ if: "exit_code == 0", stop: "complete" }] } }, stop: { max_iterations: 9 } });
    const d = new Driver(m);
    d.startRun();
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.outcome?.reason.code).toBe("phase_failures");
  });
});

describe("retries", () => {
  it("backs off transient failures with growing delays capped by max_delay, without consuming breakers", () => {
    const m = compile({ phases: { a: { run: "x", retry: { max_attempts: 5, interval: "10s", backoff: 3, max_delay: "1m" }, next: [{ stop: "complete" }] } }, stop: { max_iterations: 1, consecutive_failures: 1 } });
    const d = new Driver(m);
    d.startRun();
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      const fx = d.finish({ exit_code: 1, error: "transient" });
      const w = fx.find((e) => e.type === "wait");
      if (w && w.type === "wait") waits.push(w.ms);
    }
    expect(waits).toEqual([10_000, 30_000, 60_000, 60_000]);
    expect(d.snapshot.counters.consecutiveFailures).toBe(0);
    expect(d.running).toEqual({ phase: "a", attempt: 5 });
  });

  it("draws jitter from the event, so it is deterministic", () => {
    const m = compile({ phases: { a: { run: "x", retry: { interval: "10s", jitter: true }, next: [{ stop: "complete" }] } }, stop: { max_iterations: 1 } });
    fc.assert(
      fc.property(fc.double({ min: 0, max: 0.999, noNaN: true }), (j) => {
        const d = new Driver(m);
        d.startRun();
        const fx = d.send({ type: "phase.finished", at: 2000, phase: "a", attempt: 1, result: { exit_code: 1, output: {}, text: "", error: "transient", output_tail: "", tokens: 0, cost_usd: 0, duration_ms: 1, changes: [], jitter: j } });
        const w = fx.find((e) => e.type === "wait");
        expect(w && w.type === "wait" && w.ms).toBe(Math.round(5000 + j * 5000));
      }),
      { numRuns: 50 },
    );
  });

  it("retries other error classes only when listed in retry.on", () => {
    const m = compile({ phases: { a: { run: "x", next: [{ if: "exit_code == 0", stop: "complete" }] } }, stop: { max_iterations: 2 } });
    const d = new Driver(m);
    d.startRun();
    const fx = d.finish({ exit_code: 1, error: "timeout" });
    expect(fx.some((e) => e.type === "wait")).toBe(false);
    expect(d.snapshot.iteration).toBe(2);
  });
});

describe("interruption and resume", () => {
  it("re-runs the phase that was in flight", () => {
    const d = new Driver(loop({}));
    d.startRun();
    d.finish();
    const seq = d.snapshot.phaseSeq;
    d.send({ type: "interrupted", at: d.at, signal: "SIGTERM" });
    expect(d.snapshot.status).toBe("interrupted");
    const fx = d.send({ type: "resumed", at: d.at + 5 });
    const run = fx.find((e) => e.type === "phase.run");
    expect(run && run.type === "phase.run" && [run.phase, run.attempt, run.seq]).toEqual(["verify", 1, seq + 1]);
  });
});

describe("tasks", () => {
  const queue = (extra: Record<string, unknown> = {}) =>
    compile({
      tasks: { source: { glob: "tasks/*.md" }, max_attempts: 2, ...extra },
      phases: {
        work: { run: "x" },
        verify: { run: "y", next: [{ if: "exit_code == 0", task: "done", goto: "work" }, { goto: "work" }] },
        ...(extra.final_gate ? { gate: { run: "z", next: "work" } } : {}),
      },
      stop: { max_iterations: 20 },
    } as never);

  it("works tasks in priority order, then file order, after their dependencies", () => {
    const d = new Driver(queue());
    d.startRun([task("a", { priority: 2 }), task("b", { priority: 1, depends_on: ["c"] }), task("c", { priority: 3 })]);
    expect(d.snapshot.currentTask).toBe("a");
    d.finish();
    d.finish();
    expect(d.snapshot.currentTask).toBe("c");
    d.finish();
    d.finish();
    expect(d.snapshot.currentTask).toBe("b");
    d.finish();
    d.finish();
    expect(d.outcome).toMatchObject({ outcome: "complete", reason: { code: "tasks_done" } });
  });

  it("blocks a task after its attempts, moves on, and blocks its dependents with a reason", () => {
    const d = new Driver(queue());
    d.startRun([task("a"), task("b", { depends_on: ["a"] }), task("c")]);
    for (let i = 0; i < 2; i++) {
      d.finish();
      d.finish({ exit_code: 1, error: "exit_nonzero" });
    }
    const a = d.snapshot.tasks!.find((t) => t.id === "a")!;
    expect(a.status).toBe("blocked");
    const b = d.snapshot.tasks!.find((t) => t.id === "b")!;
    expect(b).toMatchObject({ status: "blocked", reason: "dependency a is blocked" });
    expect(d.snapshot.currentTask).toBe("c");
    d.finish();
    d.finish();
    expect(d.outcome).toMatchObject({ outcome: "blocked", reason: { code: "tasks_blocked" } });
  });

  it("notes why an attempt did not finish the task, from the reason of the rule that went on", () => {
    const m = compile({
      tasks: { source: { glob: "tasks/*.md" }, max_attempts: 2 },
      phases: {
        work: { run: "x", output: { why: { match: "why=(.*)" } } },
        verify: { run: "y", next: [{ if: "exit_code == 0", task: "done", goto: "work" }, { goto: "work", reason: "{{ phases.work.output.why }}" }] },
      },
      stop: { max_iterations: 20 },
    } as never);
    const d = new Driver(m);
    d.startRun([task("a")]);
    d.finish({ output: { why: "no tests" } });
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.snapshot.tasks![0]).toMatchObject({ status: "pending", attempts: 1, notes: ["[REJECTED] no tests"] });
    expect(d.effects.filter((e) => e.type === "task.update").at(-1)).toMatchObject({ task: "a", status: "pending", reason: "no tests" });
    d.finish({ output: { why: "still no tests" } });
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.snapshot.tasks![0]).toMatchObject({
      status: "blocked",
      notes: ["[REJECTED] no tests", "[REJECTED] still no tests", "[BLOCKED] not done after 2 attempts; last: still no tests"],
    });
    expect(d.effects.filter((e) => e.type === "task.update").at(-1)).toMatchObject({ status: "blocked", reason: "not done after 2 attempts; last: still no tests" });
  });

  it("does not mark a task done without a rule that says so (a seed marked it done with no verification)", () => {
    const m = compile({ tasks: { source: { glob: "t/*.md" }, max_attempts: 3 }, phases: { work: { run: "x" } }, stop: { max_iterations: 2, when: [{ if: "false", outcome: "complete" }] } });
    const d = new Driver(m);
    d.startRun([task("only")]);
    d.finish();
    d.finish();
    expect(d.snapshot.tasks![0]!.status).toBe("pending");
    expect(d.outcome?.reason.code).toBe("max_iterations");
  });

  it("runs the final gate when all tasks are done, and reopens the last task when it fails", () => {
    const d = new Driver(queue({ final_gate: "gate", max_attempts: 5 }));
    d.startRun([task("a"), task("b")]);
    d.finish();
    d.finish(); // a done
    d.finish();
    d.finish(); // b done → the gate runs in the same iteration
    expect(d.running?.phase).toBe("gate");
    const iteration = d.snapshot.iteration;
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    expect(d.snapshot.tasks!.find((t) => t.id === "b")!.status).toBe("pending");
    expect(d.snapshot.currentTask).toBe("b");
    expect(d.snapshot.iteration).toBe(iteration + 1);
    d.finish();
    d.finish();
    expect(d.running?.phase).toBe("gate");
    d.finish();
    expect(d.outcome).toMatchObject({ outcome: "complete", reason: { code: "tasks_done" } });
  });

  it("is blocked when only blocked tasks remain", () => {
    const d = new Driver(queue());
    d.startRun([task("a", { blocked: true }), task("b", { done: true })]);
    expect(d.outcome).toMatchObject({ outcome: "blocked", reason: { code: "tasks_blocked" } });
  });
});

describe("hooks", () => {
  it("emits hooks with PHASELOOP_* variables and waits on blocking ones", () => {
    const m = compile({
      phases: { a: { run: "x", next: [{ stop: "complete" }] } },
      stop: { max_iterations: 3 },
      hooks: { before_iteration: { run: "check.sh", on_failure: "block" }, on_complete: "notify {{ iteration }}" },
    });
    const d = new Driver(m);
    const fx = d.startRun();
    const hook = fx.find((e) => e.type === "hook.run");
    expect(hook && hook.type === "hook.run" && [hook.hook, hook.blocking, hook.env.PHASELOOP_ITERATION]).toEqual(["before_iteration", true, "1"]);
    expect(d.running).toBeUndefined();
    d.send({ type: "hook.finished", at: d.at, hook: "before_iteration", ok: true });
    const end = d.finish();
    const done = end.find((e) => e.type === "hook.run");
    expect(done && done.type === "hook.run" && [done.hook, done.command, done.env.PHASELOOP_T1_iteration, done.env.PHASELOOP_OUTCOME]).toEqual(["on_complete", 'notify "${PHASELOOP_T1_iteration}"', "1", "complete"]);
  });

  it("stops blocked when a blocking hook fails", () => {
    const m = compile({ phases: { a: { run: "x", next: [{ stop: "complete" }] } }, stop: { max_iterations: 3 }, hooks: { before_iteration: { run: "false", on_failure: "block" } } });
    const d = new Driver(m);
    d.startRun();
    d.send({ type: "hook.finished", at: d.at, hook: "before_iteration", ok: false, message: "exit 1" });
    expect(d.outcome).toMatchObject({ outcome: "blocked", reason: { code: "hook_blocked" } });
  });
});

describe("the iteration context", () => {
  it("keeps history, the last failure and text tails bounded however long the run", () => {
    const m = compile({ phases: { a: { run: "x" } }, stop: { max_iterations: 5000, when: [{ if: "false", outcome: "complete" }] } });
    const d = new Driver(m);
    d.startRun();
    const big = "x".repeat(100_000);
    for (let i = 0; i < 400; i++) d.finish({ text: big, output_tail: big, exit_code: i % 2, error: i % 2 ? "exit_nonzero" : null, output: { blob: big } });
    expect(d.snapshot.history.length).toBeLessThanOrEqual(20);
    expect(JSON.stringify(d.snapshot).length).toBeLessThan(600_000);
    expect(d.snapshot.lastFailure?.output_tail.length).toBeLessThanOrEqual(4_000);
  });
});
