import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compile, Driver } from "./helpers.ts";

const cycle = (exhausted: Record<string, unknown> | undefined, maxVisits = 2, max = 3) =>
  compile({
    phases: {
      head: { run: "h", next: "work" },
      work: {
        run: "w",
        max_visits: maxVisits,
        ...(exhausted ? { exhausted } : {}),
        next: [{ if: "text == 'again'", goto: "work" }, { if: "text == 'done'", stop: "complete" }, { goto: "head" }],
      },
      giveup: { run: "g", next: "head" },
    },
    stop: { max_iterations: max },
  } as never);

describe("max_visits", () => {
  it("takes the exhausted goto instead of entering a phase once more in an iteration", () => {
    const d = new Driver(cycle({ goto: "giveup" }));
    d.startRun();
    d.finish();
    d.finish({ text: "again" });
    expect(d.running?.phase).toBe("work");
    const fx = d.finish({ text: "again" });
    expect(fx).toContainEqual(expect.objectContaining({ type: "phase.exhausted", phase: "work", visits: 2, goto: "giveup" }));
    expect(d.running?.phase).toBe("giveup");
    expect(d.snapshot.visits).toEqual({ work: 2 });
  });

  it("stops blocked by default, with the rendered reason", () => {
    const d = new Driver(cycle(undefined, 1));
    d.startRun();
    d.finish();
    d.finish({ text: "again" });
    expect(d.outcome).toEqual({ outcome: "blocked", reason: { code: "max_visits", message: 'phase "work" reached max_visits (1) in iteration 1' } });
    const e = new Driver(cycle({ stop: "failed", reason: "work looped {{ iteration }} time" }, 1));
    e.startRun();
    e.finish();
    e.finish({ text: "again" });
    expect(e.outcome).toEqual({ outcome: "failed", reason: { code: "max_visits", message: "work looped 1 time" } });
  });

  it("counts visits per iteration: entering the loop head starts over", () => {
    const d = new Driver(cycle({ goto: "giveup" }));
    d.startRun();
    d.finish();
    d.finish({ text: "again" });
    d.finish({ text: "next" });
    expect(d.snapshot.iteration).toBe(2);
    d.finish();
    expect(d.snapshot.visits).toEqual({ work: 1 });
    d.finish({ text: "again" });
    expect(d.running?.phase).toBe("work");
  });

  it("does not count retries or a phase re-run on resume as visits", () => {
    const m = compile({
      phases: {
        head: { run: "h" },
        work: { run: "w", max_visits: 1, retry: { max_attempts: 3, on: ["exit_nonzero"], interval: 1 }, next: [{ if: "text == 'again'", goto: "work" }, { stop: "complete" }] },
      },
      stop: { max_iterations: 2 },
    } as never);
    const d = new Driver(m);
    d.startRun();
    d.finish();
    d.finish({ error: "exit_nonzero", exit_code: 1 });
    expect(d.running).toEqual({ phase: "work", attempt: 2 });
    d.send({ type: "interrupted", at: d.at, signal: "SIGKILL" });
    d.snapshot = JSON.parse(JSON.stringify(d.snapshot));
    d.send({ type: "resumed", at: d.at });
    expect(d.running).toEqual({ phase: "work", attempt: 2 });
    expect(d.snapshot.visits).toEqual({ work: 1 });
    d.finish({ text: "again" });
    expect(d.outcome?.reason.code).toBe("max_visits");
  });

  it("a chain of exhausted phases ends blocked instead of looping", () => {
    const m = compile({
      phases: {
        head: { run: "h", next: "a" },
        a: { run: "a", max_visits: 1, exhausted: { goto: "b" }, next: "b" },
        b: { run: "b", max_visits: 1, exhausted: { goto: "a" }, next: "a" },
      },
      stop: { max_iterations: 2 },
    } as never);
    const d = new Driver(m);
    d.startRun();
    d.finish();
    d.finish();
    d.finish();
    expect(d.snapshot.status).toBe("done");
    expect(d.outcome?.outcome).toBe("blocked");
    expect(d.outcome?.reason.code).toBe("max_visits");
  });
});

// ── the stop logic with visits, against a reference model ───────────────────

interface Model {
  phase: "head" | "work" | "giveup";
  iteration: number;
  visits: number;
  stopped: string | null;
  max: number;
  visitsMax: number;
  mode: "goto" | "stop";
}

function enterWork(m: Model): void {
  if (m.visits >= m.visitsMax) {
    if (m.mode === "stop") m.stopped = "blocked:max_visits";
    else m.phase = "giveup";
    return;
  }
  m.visits += 1;
  m.phase = "work";
}

function toHead(m: Model): void {
  if (m.iteration >= m.max) return void (m.stopped = "stopped:max_iterations");
  m.iteration += 1;
  m.visits = 0;
  m.phase = "head";
}

class Finish implements fc.Command<Model, Driver> {
  readonly text: "again" | "done" | "next";
  constructor(text: "again" | "done" | "next") {
    this.text = text;
  }
  check(m: Readonly<Model>): boolean {
    return m.stopped === null;
  }
  run(m: Model, d: Driver): void {
    d.finish({ text: this.text });
    if (m.phase === "head") enterWork(m);
    else if (m.phase === "giveup") toHead(m);
    else if (this.text === "done") m.stopped = "complete:transition";
    else if (this.text === "again") enterWork(m);
    else toHead(m);
    const s = d.snapshot;
    if (m.stopped) expect(`${s.outcome?.outcome}:${s.outcome?.reason.code}`).toBe(m.stopped);
    else {
      expect(d.running).toEqual({ phase: m.phase, attempt: 1 });
      expect(s.iteration).toBe(m.iteration);
      expect(s.visits?.work ?? 0).toBe(m.visits);
    }
  }
  toString() {
    return `finish(${this.text})`;
  }
}

/** A crash and resume: the snapshot goes through JSON and the phase in flight runs again, its visit not counted twice. */
class Resume implements fc.Command<Model, Driver> {
  check(m: Readonly<Model>): boolean {
    return m.stopped === null;
  }
  run(m: Model, d: Driver): void {
    d.send({ type: "interrupted", at: d.at, signal: "SIGKILL" });
    d.snapshot = JSON.parse(JSON.stringify(d.snapshot));
    d.send({ type: "resumed", at: d.at });
    expect(d.running).toEqual({ phase: m.phase, attempt: 1 });
    expect(d.snapshot.visits?.work ?? 0).toBe(m.visits);
  }
  toString() {
    return "resume";
  }
}

describe("visits in the stop logic, against a reference model", () => {
  it("every cycle ends on its exhausted rule or a limit, with visits kept across resumes", () => {
    fc.assert(
      fc.property(
        fc.record({ max: fc.integer({ min: 1, max: 4 }), visitsMax: fc.integer({ min: 1, max: 4 }), mode: fc.constantFrom<"goto" | "stop">("goto", "stop") }),
        fc.commands([fc.constantFrom<"again" | "done" | "next">("again", "again", "next", "done").map((t) => new Finish(t)), fc.constant(new Resume())], { maxCommands: 60 }),
        (cfg, cmds) => {
          const machine = cycle(cfg.mode === "goto" ? { goto: "giveup" } : { stop: "blocked" }, cfg.visitsMax, cfg.max);
          fc.modelRun(() => {
            const d = new Driver(machine);
            d.startRun();
            return { model: { phase: "head", iteration: 1, visits: 0, stopped: null, ...cfg } as Model, real: d };
          }, cmds);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a run of only 'again' ends within max_iterations × (max_visits + 2) phases", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 5 }), (max, visitsMax) => {
        const d = new Driver(cycle({ goto: "giveup" }, visitsMax, max));
        d.startRun();
        let n = 0;
        while (d.snapshot.status !== "done" && n < 1000) {
          d.finish({ text: "again" });
          n++;
        }
        expect(d.outcome?.reason.code).toBe("max_iterations");
        expect(n).toBe(max * (visitsMax + 2));
      }),
    );
  });
});
