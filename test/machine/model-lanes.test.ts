import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { laneBoard, laneTransition, type LaneBoard, type LaneEffect, type LaneEvent } from "../../src/machine/lanes.ts";
import type { Machine, TaskState } from "../../src/machine/types.ts";
import { compile, deepFreeze, start } from "./helpers.ts";

/**
 * Model-based tests of the lane scheduler (machine/lanes.ts) against a
 * reference model: which tasks get a lane and in which order (priority, then
 * file order; at most `parallel` at once), dependencies (a task starts once
 * every dependency is merged; a blocked or missing one blocks it), the shared
 * limits (the token budget and max_duration over all lanes stop every lane,
 * once), a merge conflict (rebased and verified again once, blocked the second
 * time) and an interrupt (every lane stops and resumes where it was).
 */

interface MTask {
  id: string;
  deps: string[];
  prio: number | null;
  order: number;
  status: "pending" | "done" | "blocked";
}
/** What the shell is doing for a lane: running its loop, merging it, or rebasing it. */
type Work = "loop" | "merge" | "rebase";
interface Model {
  tasks: MTask[];
  parallel: number;
  order: "priority" | "file";
  budget: number | null;
  maxMs: number | null;
  tokens: number;
  elapsed: number;
  /** Lanes with work under way, in the order they were opened. */
  work: Map<string, Work>;
  /** Lanes that conflicted once and were rebased. */
  rebased: Set<string>;
  /** Lanes a phase of whose loop finished: that phase verifies the lane again after a rebase. */
  verified: Set<string>;
  /** Lanes stopped part way and left for resume (they hold their task). */
  held: Set<string>;
  limit: string | null;
  interrupted: boolean;
  ended: null | "handover" | "stopped" | "interrupted";
  /** The lanes the model expects the last step to open, in order. */
  opened: string[];
  aborts: number;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

class Real {
  board: LaneBoard;
  at = 10_000;
  readonly machine: Machine;
  effects: LaneEffect[] = [];
  constructor(machine: Machine, board: LaneBoard) {
    this.machine = machine;
    this.board = board;
  }
  send(event: DistributiveOmit<LaneEvent, "at">): LaneEffect[] {
    const e = { at: this.at, ...event } as LaneEvent;
    const before = JSON.stringify(this.board);
    const frozen = deepFreeze(structuredClone(this.board));
    const a = laneTransition(this.machine, frozen, e);
    const b = laneTransition(this.machine, JSON.parse(before) as LaneBoard, e);
    expect(JSON.stringify(frozen)).toBe(before); // the input is untouched
    expect(a).toEqual(b); // deterministic, and a JSON round trip continues identically
    this.board = a.board;
    const all = [...a.effects];
    // the shell keeps a lane's work on its branch at once, and says so
    for (const fx of a.effects) if (fx.type === "lane.keep") all.push(...this.send({ type: "lane.kept", task: fx.task, status: fx.status, reason: fx.reason, worktree: null }));
    this.effects = all;
    return all;
  }
}

/** The model's schedule: block what depends on a blocked or missing task, open ready lanes, or end. */
function schedule(m: Model): void {
  m.opened = [];
  if (m.ended) return;
  if (!m.limit && !m.interrupted) {
    const byId = new Map(m.tasks.map((t) => [t.id, t]));
    for (let changed = true; changed; ) {
      changed = false;
      for (const t of m.tasks) {
        if (t.status === "pending" && t.deps.some((d) => !byId.has(d) || byId.get(d)!.status === "blocked")) {
          t.status = "blocked";
          changed = true;
        }
      }
    }
    const holding = new Set([...m.work.keys(), ...m.held]);
    const ready = m.tasks
      .filter((t) => t.status === "pending" && !holding.has(t.id) && t.deps.every((d) => byId.get(d)?.status === "done"))
      .sort((a, b) => (m.order === "priority" ? (a.prio ?? Infinity) - (b.prio ?? Infinity) : 0) || a.order - b.order)
      .slice(0, Math.max(0, m.parallel - holding.size));
    for (const t of ready) m.work.set(t.id, "loop");
    m.opened = ready.map((t) => t.id);
  }
  if (m.work.size > 0) return;
  m.ended = m.interrupted ? "interrupted" : m.limit ? "stopped" : "handover";
}

function checkLimit(m: Model): void {
  if (m.limit || m.interrupted || m.ended) return;
  if (m.budget !== null && m.tokens >= m.budget) m.limit = "budget_tokens";
  else if (m.maxMs !== null && m.elapsed >= m.maxMs) m.limit = "max_duration";
  if (m.limit) m.aborts += 1;
}

function compare(m: Model, r: Real): void {
  const s = r.board.s;
  const opened = r.effects.filter((e) => e.type === "lane.open").map((e) => (e as { task: string }).task);
  expect(opened).toEqual(m.opened);
  expect(s.tasks!.map((t) => [t.id, t.status])).toEqual(m.tasks.map((t) => [t.id, t.status]));
  expect(new Set(r.board.busy)).toEqual(new Set(m.work.keys()));
  expect(s.tokens).toBe(m.tokens);
  expect(s.elapsedMs).toBe(m.elapsed);
  // never more lanes at once than `parallel`, and each after its dependencies were merged
  const inLane = s.lanes!.lanes.filter((l) => l.status === "running" || l.status === "merging");
  expect(inLane.length).toBeLessThanOrEqual(m.parallel);
  const byId = new Map(s.tasks!.map((t) => [t.id, t]));
  for (const l of inLane) for (const d of byId.get(l.task)!.depends_on) expect(byId.get(d)?.status).toBe("done");
  expect(r.board.limit?.code ?? null).toBe(m.limit);
  const ends = r.effects.filter((e) => e.type === "lanes.handover" || e.type === "stop" || e.type === "lanes.interrupted");
  if (m.ended === null) {
    expect(s.status).toBe("running");
  } else if (m.ended === "stopped") {
    expect(s.status).toBe("done");
    expect(s.outcome).toMatchObject({ outcome: "stopped", reason: { code: m.limit } });
  } else {
    expect(s.status).toBe("interrupted");
  }
  expect(ends.length).toBeLessThanOrEqual(1);
  if (m.ended === "handover") {
    // the queue is finished: every task done or blocked, or pending behind one that cannot finish
    for (const t of m.tasks) if (t.status === "pending") expect(t.deps.some((d) => byId.get(d)?.status !== "done")).toBe(true);
  }
}

/** Lanes with `work` under way, in a stable order. */
function lanesAt(m: Readonly<Model>, work: Work): string[] {
  return [...m.work.entries()].filter(([, w]) => w === work).map(([t]) => t);
}

type Cmd = fc.Command<Model, Real>;

class LoopEnds implements Cmd {
  readonly pick: number;
  readonly end: "done" | "not-done" | "interrupted";
  constructor(pick: number, end: "done" | "not-done" | "interrupted") {
    this.pick = pick;
    this.end = end;
  }
  check(m: Readonly<Model>): boolean {
    if (m.ended || lanesAt(m, "loop").length === 0) return false;
    // a loop is stopped part way only when the run stops it
    return this.end !== "interrupted" || m.limit !== null || m.interrupted;
  }
  run(m: Model, r: Real): void {
    const lanes = lanesAt(m, "loop");
    const task = lanes[this.pick % lanes.length]!;
    const fx = r.send({ type: "lane.loop.ended", task, end: this.end, attempts: 1, ...(this.end === "not-done" ? { reason: "gave up" } : {}) });
    const t = m.tasks.find((x) => x.id === task)!;
    if (this.end === "done") m.work.set(task, "merge");
    else {
      m.work.delete(task);
      if (this.end === "not-done") t.status = "blocked";
      else if (m.interrupted || !m.limit) m.held.add(task);
      // a lane a limit stopped keeps its work on its branch; its task stays pending
      expect(fx.some((e) => e.type === "lane.keep")).toBe(this.end === "not-done" || (m.limit !== null && !m.interrupted));
    }
    schedule(m);
    compare(m, r);
  }
  toString(): string {
    return `loop ${this.pick} ${this.end}`;
  }
}

class MergeEnds implements Cmd {
  readonly pick: number;
  readonly end: "merged" | "conflict" | "failed";
  constructor(pick: number, end: "merged" | "conflict" | "failed") {
    this.pick = pick;
    this.end = end;
  }
  check(m: Readonly<Model>): boolean {
    return !m.ended && lanesAt(m, "merge").length > 0;
  }
  run(m: Model, r: Real): void {
    const lanes = lanesAt(m, "merge");
    const task = lanes[this.pick % lanes.length]!;
    const t = m.tasks.find((x) => x.id === task)!;
    let fx: LaneEffect[];
    if (this.end === "merged") {
      fx = r.send({ type: "lane.merged", task, commit: "c", attempts: 1 });
      t.status = "done";
      m.work.delete(task);
      expect(fx).toContainEqual({ type: "lane.tidy", task });
    } else if (this.end === "failed") {
      fx = r.send({ type: "lane.failed", task, reason: "cannot merge into main: boom" });
      t.status = "blocked";
      m.work.delete(task);
    } else {
      fx = r.send({ type: "lane.conflict", task, files: ["a.txt"] });
      if (m.rebased.has(task)) {
        // the second conflict blocks the task, its work kept on its branch
        t.status = "blocked";
        m.work.delete(task);
        expect(fx).toContainEqual({ type: "lane.keep", task, status: "blocked", reason: "conflicts with main in a.txt" });
      } else {
        m.work.set(task, "rebase");
        expect(fx).toContainEqual({ type: "lane.rebase", task, files: ["a.txt"] });
      }
    }
    schedule(m);
    compare(m, r);
  }
  toString(): string {
    return `merge ${this.pick} ${this.end}`;
  }
}

class RebaseEnds implements Cmd {
  readonly pick: number;
  readonly ok: boolean;
  constructor(pick: number, ok: boolean) {
    this.pick = pick;
    this.ok = ok;
  }
  check(m: Readonly<Model>): boolean {
    return !m.ended && lanesAt(m, "rebase").length > 0;
  }
  run(m: Model, r: Real): void {
    const lanes = lanesAt(m, "rebase");
    const task = lanes[this.pick % lanes.length]!;
    if (this.ok) {
      const fx = r.send({ type: "lane.rebased", task });
      m.rebased.add(task);
      if (m.verified.has(task)) {
        // the phase that finished the task runs again on the rebased lane
        expect(fx).toContainEqual({ type: "lane.verify", task, phase: "work" });
        m.work.set(task, "loop");
      } else {
        // no phase to run again: it merges again
        expect(fx).toContainEqual({ type: "lane.merge", task });
      }
    } else {
      r.send({ type: "lane.failed", task, reason: "cannot rebase onto main", conflicts: ["a.txt"] });
      m.tasks.find((x) => x.id === task)!.status = "blocked";
      m.work.delete(task);
    }
    schedule(m);
    compare(m, r);
  }
  toString(): string {
    return `rebase ${this.pick} ${this.ok}`;
  }
}

class Usage implements Cmd {
  readonly pick: number;
  readonly tokens: number;
  constructor(pick: number, tokens: number) {
    this.pick = pick;
    this.tokens = tokens;
  }
  check(m: Readonly<Model>): boolean {
    return !m.ended && lanesAt(m, "loop").length > 0;
  }
  run(m: Model, r: Real): void {
    const lanes = lanesAt(m, "loop");
    const task = lanes[this.pick % lanes.length]!;
    const aborts = m.aborts;
    const fx = r.send({ type: "lane.progress", task, iteration: 1, used: { phase: "work", tokens: this.tokens, costUsd: 0 } });
    m.tokens += this.tokens;
    m.verified.add(task);
    checkLimit(m);
    schedule(m);
    expect(fx.filter((e) => e.type === "lanes.abort").length).toBe(m.aborts - aborts);
    compare(m, r);
  }
  toString(): string {
    return `usage ${this.pick} ${this.tokens}`;
  }
}

class Tick implements Cmd {
  readonly ms: number;
  constructor(ms: number) {
    this.ms = ms;
  }
  check(m: Readonly<Model>): boolean {
    return !m.ended;
  }
  run(m: Model, r: Real): void {
    r.at += this.ms;
    const aborts = m.aborts;
    const fx = r.send({ type: "tick" });
    m.elapsed += this.ms;
    checkLimit(m);
    schedule(m);
    expect(fx.filter((e) => e.type === "lanes.abort").length).toBe(m.aborts - aborts);
    compare(m, r);
  }
  toString(): string {
    return `tick ${this.ms}`;
  }
}

class Interrupt implements Cmd {
  check(m: Readonly<Model>): boolean {
    return !m.ended;
  }
  run(m: Model, r: Real): void {
    const fx = r.send({ type: "interrupted", signal: "SIGINT" });
    expect(fx.some((e) => e.type === "lanes.abort")).toBe(!m.interrupted);
    m.interrupted = true;
    schedule(m);
    compare(m, r);
  }
  toString(): string {
    return "interrupt";
  }
}

class Resume implements Cmd {
  check(m: Readonly<Model>): boolean {
    return m.ended === "interrupted";
  }
  run(m: Model, r: Real): void {
    // a new life of the run, from its checkpoint: the lanes the interrupt stopped go on where they were
    const s = JSON.parse(JSON.stringify(r.board.s)) as LaneBoard["s"];
    r.board = laneBoard(s);
    const fx = r.send({ type: "lanes.begin", head: "abc", names: {} });
    expect(fx.filter((e) => e.type === "lane.resume").map((e) => (e as { task: string }).task).sort()).toEqual([...m.held].sort());
    for (const t of m.held) m.work.set(t, "loop");
    m.held.clear();
    m.ended = null;
    m.interrupted = false;
    m.limit = null;
    checkLimit(m);
    schedule(m);
    compare(m, r);
  }
  toString(): string {
    return "resume";
  }
}

/** A queue without cycles: each task may depend on earlier ones (now and then on one that does not exist). */
const queueArb = fc.integer({ min: 1, max: 7 }).chain((n) =>
  fc.tuple(
    ...Array.from({ length: n }, (_, i) =>
      fc.record({
        deps: fc.subarray(Array.from({ length: i }, (_, j) => `t${j}`), { maxLength: Math.min(2, i) }),
        missing: fc.boolean().map((b) => (b && i % 4 === 3 ? ["nope"] : [])),
        prio: fc.option(fc.integer({ min: 0, max: 3 }), { nil: null }),
      }),
    ),
  ).map((specs) => specs.map((s, i): MTask => ({ id: `t${i}`, deps: [...s.deps, ...s.missing], prio: s.prio, order: i, status: "pending" }))),
);

const commands = [
  fc.tuple(fc.nat(), fc.constantFrom<"done" | "not-done" | "interrupted">("done", "done", "done", "not-done", "interrupted")).map(([p, e]) => new LoopEnds(p, e)),
  fc.tuple(fc.nat(), fc.constantFrom<"merged" | "conflict" | "failed">("merged", "merged", "merged", "conflict", "failed")).map(([p, e]) => new MergeEnds(p, e)),
  fc.tuple(fc.nat(), fc.constantFrom(true, true, false)).map(([p, ok]) => new RebaseEnds(p, ok)),
  fc.tuple(fc.nat(), fc.integer({ min: 0, max: 60 })).map(([p, t]) => new Usage(p, t)),
  fc.integer({ min: 0, max: 20_000 }).map((ms) => new Tick(ms)),
  fc.constant(new Interrupt()).map(() => new Interrupt()),
  fc.constant(new Resume()).map(() => new Resume()),
];

function setup(tasks: MTask[], parallel: number, order: "priority" | "file", budget: number | null, maxMs: number | null): { machine: Machine; board: LaneBoard } {
  const machine = compile({
    tasks: { source: { file: "tasks.json" }, order },
    phases: { work: { run: "work", next: [{ task: "done" }] } },
    stop: { max_iterations: 5, ...(budget !== null ? { budget: { tokens: budget } } : {}), ...(maxMs !== null ? { max_duration: `${maxMs / 1000}s` } : {}) },
  } as never);
  const s = start(machine);
  s.tasks = tasks.map((t): TaskState => ({ id: t.id, title: t.id, body: "", status: t.status, attempts: 0, priority: t.prio, depends_on: t.deps, notes: [], order: t.order, reason: null }));
  s.lanes = { parallel, into: "main", targetDir: "/w", lanes: [] };
  s.status = "running";
  return { machine, board: laneBoard(s) };
}

describe("the lane scheduler against a reference model", () => {
  it("opens lanes in the ready order, after dependencies, within the shared limits; merges, conflicts and interrupts as the model says", () => {
    fc.assert(
      fc.property(
        queueArb,
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom<"priority" | "file">("priority", "file"),
        fc.option(fc.integer({ min: 1, max: 200 }), { nil: null }),
        fc.option(fc.integer({ min: 1, max: 60 }).map((s) => s * 1000), { nil: null }),
        fc.commands(commands, { maxCommands: 60 }),
        (tasks, parallel, order, budget, maxMs, cmds) => {
          const { machine, board } = setup(tasks, parallel, order, budget, maxMs);
          fc.modelRun(() => {
            const real = new Real(machine, board);
            const model: Model = { tasks: structuredClone(tasks), parallel, order, budget, maxMs, tokens: 0, elapsed: 0, work: new Map(), rebased: new Set(), verified: new Set(), held: new Set(), limit: null, interrupted: false, ended: null, opened: [], aborts: 0 };
            real.send({ type: "lanes.begin", head: "abc", names: {} });
            schedule(model);
            compare(model, real);
            return { model, real };
          }, cmds);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("takes up the lanes a crash left: a merging lane merges again, a running one resumes, a merged one is tidied; and the queue goes on", () => {
    const { machine, board } = setup(
      [
        { id: "a", deps: [], prio: null, order: 0, status: "pending" },
        { id: "b", deps: [], prio: null, order: 1, status: "pending" },
        { id: "c", deps: [], prio: null, order: 2, status: "done" },
        { id: "d", deps: ["c"], prio: null, order: 3, status: "pending" },
      ],
      3,
      "file",
      null,
      null,
    );
    const lane = (task: string, status: "running" | "merging" | "merged") => ({ task, branch: `phaseloop/r1/${task}`, worktree: `/w/${task}`, base: "abc", status, iteration: 1, phase: null, reason: null, conflicts: [], rebased: false, verify: "work", tokens: 0, cost_usd: 0 });
    board.s.lanes!.lanes = [lane("a", "merging"), lane("b", "running"), lane("c", "merged")];
    board.s.status = "interrupted";
    const r = new Real(machine, board);
    const fx = r.send({ type: "lanes.begin", head: "h1", names: { d: { branch: "phaseloop/r1/d", worktree: "/w/.phaseloop/lanes/r1/d" } } });
    expect(fx).toEqual([
      { type: "lane.merge", task: "a", resumed: true },
      { type: "lane.resume", task: "b" },
      { type: "lane.tidy", task: "c" },
      { type: "lane.open", task: "d" },
    ]);
    expect(r.board.busy).toEqual(["a", "b", "d"]);
    expect(r.board.s.lanes!.lanes.find((l) => l.task === "d")).toMatchObject({ branch: "phaseloop/r1/d", worktree: "/w/.phaseloop/lanes/r1/d", base: "h1", status: "running" });
    // a is merged: the lanes after it branch from the commit it left
    r.send({ type: "lane.merged", task: "a", commit: "h2", attempts: 2 });
    expect(r.board.head).toBe("h2");
    expect(r.board.s.tasks!.find((t) => t.id === "a")).toMatchObject({ status: "done", attempts: 2 });
  });

  it("hands the finished queue to the run's machine with room for its final gate", () => {
    const { machine, board } = setup([{ id: "a", deps: [], prio: null, order: 0, status: "pending" }], 2, "file", null, null);
    const r = new Real(machine, board);
    r.send({ type: "lanes.begin", head: "h1", names: {} });
    r.send({ type: "lane.progress", task: "a", iteration: 3, phase: "work" });
    r.send({ type: "lane.loop.ended", task: "a", end: "done", attempts: 1 });
    const fx = r.send({ type: "lane.merged", task: "a", commit: "c1", attempts: 1 });
    expect(fx).toEqual([{ type: "task.update", task: "a", status: "done", attempts: 1, reason: null }, { type: "lane.tidy", task: "a" }, { type: "lanes.handover" }]);
    expect(r.board.s).toMatchObject({ status: "interrupted", iteration: 3, currentTask: null, lastDoneTask: "a" });
    expect(r.board.s.limits.maxIterations).toBeGreaterThanOrEqual(4);
  });
});
