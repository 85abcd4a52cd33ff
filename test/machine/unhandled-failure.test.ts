import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PipelineDoc } from "../../src/pipeline/spec.ts";
import { compile, Driver } from "./helpers.ts";

/**
 * A phase whose agent failed, or whose required output is missing, never
 * lets the run complete: a `stop: complete` reached while such a failure
 * stands in the iteration (no rule tested its status or error) ends the run
 * `failed` with code `unhandled_failure`. The code-scribe defect: a reviewer
 * that crashes without writing its verdict fell through to a check of
 * `true`, and the run completed.
 */
type Phases = PipelineDoc["phases"];

const executeReview = (reviewRules: NonNullable<Phases[string]["next"]>): Omit<PipelineDoc, "phaseloop" | "name"> => ({
  agents: { worker: { command: ["agent"] } },
  phases: {
    execute: {
      agent: "worker",
      prompt: "work",
      output: { status: { match: "STATUS: (COMPLETE|INCOMPLETE)", default: "INCOMPLETE" } },
      next: [{ if: "output.status == 'COMPLETE'", goto: "verify" }, { goto: "review" }],
    },
    review: { agent: "worker", prompt: "review", output: { review: { file: "review.toml", required: true } }, next: reviewRules },
    verify: { run: "true", next: [{ if: "exit_code == 0", stop: "complete" }, { goto: "execute" }] },
  },
  stop: { max_iterations: 5 },
});

/** The recipe's review rules: none of them tests the review's status when it crashed (its error is exit_nonzero). */
const RECIPE_RULES = [
  { if: "error == 'output_invalid'", goto: "execute" },
  { if: "trim(default(output.review.blocker, '')) != ''", stop: "blocked" as const },
  { if: "len(default(output.review.pending, [])) == 0", goto: "verify" },
  { goto: "execute" },
];

const crashed = { error: "exit_nonzero" as const, exit_code: 1, message: "exit code 1: reviewer crashed", output: { review: null } };

describe("a crashed review never completes the run", () => {
  it("fails the run with unhandled_failure when the check after a crashed reviewer passes", () => {
    const d = new Driver(compile(executeReview(RECIPE_RULES)));
    d.startRun();
    d.finish({ output: { status: "INCOMPLETE" } });
    expect(d.running?.phase).toBe("review");
    d.finish(crashed);
    expect(d.running?.phase).toBe("verify"); // the run goes on as its rules say
    d.finish({ exit_code: 0 });
    expect(d.outcome?.outcome).toBe("failed");
    expect(d.outcome?.reason.code).toBe("unhandled_failure");
    expect(d.outcome?.reason.message).toContain('phase "review" failed');
    expect(d.outcome?.reason.message).toContain("reviewer crashed");
    const stopFx = d.effects.find((e) => e.type === "stop");
    expect(stopFx).toMatchObject({ outcome: "failed", reason: { code: "unhandled_failure" } });
  });

  it("a missing required output stands like a crash", () => {
    const d = new Driver(compile(executeReview(RECIPE_RULES.slice(1))));
    d.startRun();
    d.finish({ output: { status: "INCOMPLETE" } });
    d.finish({ error: "output_invalid", message: 'output "review" is required but was not found', output: { review: null } });
    d.finish({ exit_code: 0 });
    expect(d.outcome).toMatchObject({ outcome: "failed", reason: { code: "unhandled_failure" } });
  });

  it("a rule that tests the failure handles it: the run may complete through it", () => {
    const d = new Driver(compile(executeReview([{ if: "status == 'failed'", goto: "verify", label: "no review: the check decides" }, ...RECIPE_RULES])));
    d.startRun();
    d.finish({ output: { status: "INCOMPLETE" } });
    d.finish(crashed);
    d.finish({ exit_code: 0 });
    expect(d.outcome).toMatchObject({ outcome: "complete", reason: { code: "transition" } });
  });

  it("a failure in an earlier iteration does not stand in a later one, nor does one the phase made good", () => {
    const d = new Driver(compile(executeReview(RECIPE_RULES)));
    d.startRun();
    d.finish({ output: { status: "INCOMPLETE" } });
    d.finish({ ...crashed, output: { review: null } });
    d.finish({ exit_code: 1, error: "exit_nonzero" }); // the check fails: back to execute, a new iteration
    expect(d.snapshot.iteration).toBe(2);
    expect(d.snapshot.unhandled).toBeUndefined();
    d.finish({ output: { status: "COMPLETE" } });
    d.finish({ exit_code: 0 });
    expect(d.outcome).toMatchObject({ outcome: "complete" });
  });

  it("a later phase's chosen rule that tests the failed phase's status handles it", () => {
    const d = new Driver(
      compile({
        agents: { worker: { command: ["agent"] } },
        phases: {
          work: { agent: "worker", prompt: "x" },
          check: { run: "true", next: [{ if: "exit_code == 0 && phases.work.status != 'succeeded'", stop: "complete", reason: "the check decides" }, { if: "exit_code == 0", stop: "complete" }] },
        },
        stop: { max_iterations: 2 },
      }),
    );
    d.startRun();
    d.finish({ error: "timeout", exit_code: null });
    expect(d.snapshot.unhandled?.map((u) => u.phase)).toEqual(["work"]);
    d.finish({ exit_code: 0 });
    expect(d.outcome).toMatchObject({ outcome: "complete", reason: { message: "the check decides" } });
  });

  it("a command phase's failing exit code is its verdict, not a standing failure", () => {
    const d = new Driver(
      compile({
        phases: {
          lint: { run: "lint" },
          verify: { run: "true", next: [{ if: "exit_code == 0", stop: "complete" }] },
        },
        stop: { max_iterations: 2 },
      }),
    );
    d.startRun();
    d.finish({ exit_code: 1, error: "exit_nonzero" });
    d.finish({ exit_code: 0 });
    expect(d.outcome?.outcome).toBe("complete");
  });

  it("stop.when complete and a phase's own stop: complete are both held back", () => {
    const d = new Driver(
      compile({
        agents: { worker: { command: ["agent"] } },
        phases: { work: { agent: "worker", prompt: "x", next: [{ stop: "complete" }] } },
        stop: { max_iterations: 2 },
      }),
    );
    d.startRun();
    d.finish({ error: "agent_error", exit_code: null, message: "claude: overloaded" });
    expect(d.outcome).toMatchObject({ outcome: "failed", reason: { code: "unhandled_failure" } });
  });
});

/** The reference: a run completes only when its check passes with no failure of the iteration's agents left standing. */
interface Model {
  phase: "execute" | "review" | "verify";
  iteration: number;
  standing: Set<string>;
  handles: boolean;
  stopped: string | null;
}

type Err = null | "exit_nonzero" | "agent_error" | "output_invalid" | "timeout";

class Finish implements fc.Command<Model, Driver> {
  readonly error: Err;
  readonly complete: boolean;
  constructor(error: Err, complete: boolean) {
    this.error = error;
    this.complete = complete;
  }
  check(m: Readonly<Model>): boolean {
    return m.stopped === null;
  }
  run(m: Model, d: Driver): void {
    const failed = this.error !== null;
    const verdict = m.phase === "verify" ? (this.error === null ? 0 : 1) : failed ? 1 : 0;
    const err = m.phase === "verify" && failed ? "exit_nonzero" : this.error;
    d.finish({ error: err, exit_code: verdict, output: m.phase === "execute" ? { status: this.complete ? "COMPLETE" : "INCOMPLETE" } : m.phase === "review" ? { review: failed ? null : { pending: [] } } : {}, message: err });
    // the reference model
    if (m.phase === "execute") {
      if (failed) m.standing.add("execute");
      else m.standing.delete("execute");
      m.phase = this.complete ? "verify" : "review"; // its rules read the output, failed or not
    } else if (m.phase === "review") {
      // with `handles`, the first rule tests status and goes to verify
      if (failed && !m.handles) m.standing.add("review");
      else m.standing.delete("review");
      m.phase = failed && !m.handles && err === "output_invalid" ? "execute" : "verify";
      if (m.phase === "execute") m.standing.delete("review"); // that rule tests error: handled
      if (m.phase === "execute") this.newIteration(m);
    } else if (!failed) {
      m.stopped = m.standing.size === 0 ? "complete:transition" : "failed:unhandled_failure";
    } else {
      m.phase = "execute";
      this.newIteration(m);
    }
    if (d.snapshot.status === "done") expect(`${d.outcome!.outcome}:${d.outcome!.reason.code}`).toBe(m.stopped);
    else {
      expect(m.stopped).toBeNull();
      expect(d.running?.phase).toBe(m.phase);
      expect(new Set((d.snapshot.unhandled ?? []).map((u) => u.phase))).toEqual(m.standing);
    }
  }
  private newIteration(m: Model): void {
    m.iteration += 1;
    m.standing.clear();
    if (m.iteration > 5) m.stopped = "stopped:max_iterations";
  }
  toString(): string {
    return `finish(${this.error}, ${this.complete})`;
  }
}

describe("standing failures against a reference model", () => {
  it("the run completes exactly when the check passes with no agent failure standing in its iteration", () => {
    const err = fc.constantFrom<Err>(null, null, "exit_nonzero", "agent_error", "output_invalid", "timeout");
    fc.assert(
      fc.property(fc.boolean(), fc.commands([fc.tuple(err, fc.boolean()).map(([e, c]) => new Finish(e, c))], { maxCommands: 40 }), (handles, cmds) => {
        const rules = handles ? [{ if: "status == 'failed'", goto: "verify" }, ...RECIPE_RULES.slice(2)] : RECIPE_RULES.filter((r) => r.stop === undefined);
        const machine = compile(executeReview(rules));
        fc.modelRun(() => {
          const d = new Driver(machine);
          d.startRun();
          return { model: { phase: "execute", iteration: 1, standing: new Set<string>(), handles, stopped: null } as Model, real: d };
        }, cmds);
      }),
      { numRuns: 300 },
    );
  });
});
