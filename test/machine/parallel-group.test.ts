import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatDot, formatMermaid } from "../../src/machine/format-graph.ts";
import type { Effect } from "../../src/machine/types.ts";
import { checkMermaid } from "./mermaid-check.ts";
import { compile, Driver, result } from "./helpers.ts";

const group = (join?: string, extra: Record<string, unknown> = {}) =>
  compile({
    phases: {
      plan: { run: "p" },
      reviews: { parallel: ["a", "b", "c"], ...(join ? { join } : {}), next: [{ if: "status == 'succeeded'", stop: "complete", reason: "{{ output.succeeded }}" }, { stop: "blocked", reason: "{{ output.failed }}" }], ...extra },
      a: { run: "a", retry: { max_attempts: 2, on: ["transient"], interval: "1s" } },
      b: { run: "b" },
      c: { run: "c", when: "params.c" },
    },
    params: { c: { type: "boolean", default: true } },
    stop: { max_iterations: 2 },
  } as never);

const runs = (fx: Effect[]) => fx.filter((e): e is Extract<Effect, { type: "phase.run" }> => e.type === "phase.run");

describe("parallel groups", () => {
  it("start every member at once, each its own phase run, and wait for all", () => {
    const d = new Driver(group());
    d.startRun();
    const fx = d.finish();
    expect(runs(fx).map((e) => [e.phase, e.seq, e.group])).toEqual([["a", 2, "reviews"], ["b", 3, "reviews"], ["c", 4, "reviews"]]);
    expect(d.snapshot.awaiting).toEqual({ kind: "group", group: "reviews", running: { a: { attempt: 1, seq: 2 }, b: { attempt: 1, seq: 3 }, c: { attempt: 1, seq: 4 } } });
    d.send({ type: "phase.finished", at: 2000, phase: "b", attempt: 1, result: result() });
    d.send({ type: "phase.finished", at: 2001, phase: "c", attempt: 1, result: result() });
    expect(d.snapshot.status).toBe("running");
    d.send({ type: "phase.finished", at: 2002, phase: "a", attempt: 1, result: result() });
    expect(d.outcome).toEqual({ outcome: "complete", reason: { code: "transition", message: '["a","b","c"]' } });
    expect(d.snapshot.results.reviews).toMatchObject({ status: "succeeded", output: { succeeded: ["a", "b", "c"], failed: [], skipped: [] } });
  });

  for (const [join, failing, expected] of [
    ["all_success", ["b"], "blocked"],
    ["all_success", [], "complete"],
    ["one_success", ["a", "b"], "complete"],
    ["one_success", ["a", "b", "c"], "blocked"],
    ["all_done", ["a", "b", "c"], "complete"],
  ] as const) {
    it(`join ${join} with ${failing.length ? failing.join(", ") : "no member"} failing is ${expected === "complete" ? "succeeded" : "failed"}`, () => {
      const d = new Driver(group(join));
      d.startRun();
      d.finish();
      for (const m of ["c", "a", "b"]) {
        const failed = (failing as readonly string[]).includes(m);
        d.send({ type: "phase.finished", at: 2000, phase: m, attempt: 1, result: result(failed ? { error: "exit_nonzero", exit_code: 1 } : {}) });
      }
      expect(d.outcome?.outcome).toBe(expected);
      if (expected === "blocked") expect(d.snapshot.results.reviews).toMatchObject({ status: "failed", error: "join_failed" });
    });
  }

  it("a member retries beside the others, after its delay; a member that broke its tool set counts as failed", () => {
    const d = new Driver(group("one_success"));
    d.startRun();
    d.finish();
    const fx = d.send({ type: "phase.finished", at: 2000, phase: "a", attempt: 1, result: result({ error: "transient", exit_code: 1 }) });
    expect(runs(fx)).toEqual([expect.objectContaining({ phase: "a", attempt: 2, seq: 5, delayMs: 1000, group: "reviews" })]);
    d.send({ type: "phase.finished", at: 2001, phase: "b", attempt: 1, result: result({ error: "policy_violation", output: { verdict: "ok" } }) });
    expect(d.snapshot.results.b).toMatchObject({ status: "failed", output: {} });
    d.send({ type: "phase.finished", at: 2002, phase: "c", attempt: 1, result: result({ error: "exit_nonzero" }) });
    expect(d.snapshot.status).toBe("running");
    d.send({ type: "phase.finished", at: 2003, phase: "a", attempt: 2, result: result() });
    expect(d.outcome?.outcome).toBe("complete");
  });

  it("skips a member whose when does not hold", () => {
    const e = new Driver(group());
    e.snapshot.params = { c: false };
    e.startRun();
    const fx = e.finish();
    expect(runs(fx).map((x) => x.phase)).toEqual(["a", "b"]);
    expect(fx).toContainEqual(expect.objectContaining({ type: "phase.skipped", phase: "c" }));
    e.send({ type: "phase.finished", at: 2000, phase: "a", attempt: 1, result: result() });
    e.send({ type: "phase.finished", at: 2000, phase: "b", attempt: 1, result: result() });
    expect(e.snapshot.results.reviews?.output).toEqual({ succeeded: ["a", "b"], failed: [], skipped: ["c"] });
  });

  it("after a crash, resume starts only the members still running; finished ones are not run again", () => {
    fc.assert(
      fc.property(fc.subarray(["a", "b", "c"]), (finishedFirst) => {
        const d = new Driver(group("all_done"));
        d.startRun();
        d.finish();
        for (const m of finishedFirst) d.send({ type: "phase.finished", at: 2000, phase: m, attempt: 1, result: result() });
        if (d.snapshot.status === "done") return;
        d.send({ type: "interrupted", at: 2001, signal: "SIGKILL" });
        d.snapshot = JSON.parse(JSON.stringify(d.snapshot));
        const fx = d.send({ type: "resumed", at: 2002 });
        const rerun = runs(fx).map((e) => e.phase);
        expect(rerun).toEqual(["a", "b", "c"].filter((m) => !finishedFirst.includes(m)));
        for (const m of rerun) d.send({ type: "phase.finished", at: 2003, phase: m, attempt: 1, result: result() });
        expect(d.outcome?.outcome).toBe("complete");
        expect(d.snapshot.counters.phasesRun).toBe(4);
      }),
    );
  });

  it("fall-through passes members by: after the group comes the phase after its members", () => {
    const m = compile({
      phases: {
        plan: { run: "p" },
        reviews: { parallel: ["a", "b"] },
        a: { run: "a" },
        b: { run: "b" },
        synthesize: { run: "s", next: [{ stop: "complete" }] },
      },
      stop: { max_iterations: 1 },
    } as never);
    const d = new Driver(m);
    d.startRun();
    d.finish();
    d.send({ type: "phase.finished", at: 2000, phase: "a", attempt: 1, result: result() });
    d.send({ type: "phase.finished", at: 2000, phase: "b", attempt: 1, result: result() });
    expect(d.running?.phase).toBe("synthesize");
  });

  it("the graph draws the fork to the members and the join the group's rules leave from", () => {
    const mermaid = formatMermaid(group("one_success"));
    expect(checkMermaid(mermaid)).toEqual([]);
    for (const line of ["p_reviews ==> p_a", "p_a ==> j_reviews", "p_reviews ==> p_c", "p_c ==> j_reviews", 'j_reviews{{"join one_success"}}']) expect(mermaid).toContain(line);
    expect(mermaid).toMatch(/j_reviews -->\|"status == 'succeeded'"\| complete/);
    const dot = formatDot(group());
    expect(dot).toContain('p_reviews -> p_b [label="", style=bold];');
    expect(dot).toContain('p_b -> j_reviews [label="", style=bold];');
  });
});
