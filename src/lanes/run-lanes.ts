/**
 * A task queue worked in parallel lanes. Each ready task (its dependencies
 * done and merged) gets a lane: a git worktree under `.phaseloop/lanes/` on a
 * branch of its own from the target's head, where its loop runs (lane-runner.ts).
 * A task its loop finished is committed and merged into the target (lane-merge.ts);
 * the run's checkpoint (state.json) holds the queue and every lane, and each
 * lane has its own. When the queue is finished, the run's own machine takes
 * over on the merged result: the final gate, the end hooks, the outcome.
 */
import { rmdirSync } from "node:fs";
import { join } from "node:path";
import type { Machine, Snapshot, StopReason } from "../machine/types.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { EventLog, type EventInput } from "../run/event-log.ts";
import type { ProcessEnv } from "../run/run-context.ts";
import type { Reporter, RunEvent } from "../run/run-events.ts";
import type { RunInfo } from "../run/run-info.ts";
import { createRunner, type RunResult } from "../run/run-pipeline.ts";
import { writeSummary } from "../run/write-summary.ts";
import { writeBackTask } from "../run/load-tasks.ts";
import { exitCodeFor } from "../machine/stop-logic.ts";
import { addWorktree, gitSettled, removeWorktree, revParse } from "./lane-git.ts";
import { LaneLoop, laneName } from "./lane-runner.ts";
import { abortUnfinishedMerge, finishLane, tidyLane, type LaneEnd } from "./lane-merge.ts";
import { blockDependents, onlyTaskOf, queueState, readyTasks, sharedLimitReached } from "./schedule-lanes.ts";

const CHECKPOINT_MS = 100;

export interface LanesOptions {
  machine: Machine;
  store: RunStore;
  info: RunInfo;
  reporter: Reporter;
  env: ProcessEnv;
  signal: AbortSignal;
  sandbox?: SandboxMode;
  /** The run's snapshot, with its tasks and `lanes`. */
  snapshot: Snapshot;
  /** The run log's last seq. */
  seq: number;
  recordedIterations?: Set<number>;
}

export async function runLanes(o: LanesOptions, preface: Record<string, unknown>[]): Promise<RunResult> {
  return new LaneRun(o).run(preface);
}

class LaneRun {
  private readonly o: LanesOptions;
  private readonly s: Snapshot;
  private readonly log: EventLog;
  private readonly pending: RunEvent[] = [];
  private readonly loops = new Map<string, LaneLoop>();
  private readonly running = new Map<string, Promise<{ task: string; result: RunResult }>>();
  private interrupted: string | undefined;
  private limit: StopReason | null = null;
  private readonly startedAt = Date.now();
  private readonly elapsedBefore: number;
  private checkpointDue = false;
  private checkpointTimer: ReturnType<typeof setTimeout> | undefined;
  private handedOver = false;
  /** The target's head, as phaseloop's last merge left it (lanes start from it). */
  private targetHead: string | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(o: LanesOptions) {
    this.o = o;
    this.s = structuredClone(o.snapshot);
    this.s.status = "running";
    this.elapsedBefore = this.s.elapsedMs;
    this.log = new EventLog(o.store, o.reporter, o.info.run_id, o.seq, o.recordedIterations);
    o.signal.addEventListener("abort", () => {
      this.interrupted ??= String(o.signal.reason ?? "SIGINT");
      for (const loop of this.loops.values()) loop.controller.abort(o.signal.reason);
    });
  }

  private get lanes() {
    return this.s.lanes!;
  }

  async run(preface: Record<string, unknown>[]): Promise<RunResult> {
    for (const p of preface) this.emit(p as EventInput);
    this.checkpoint();
    await abortUnfinishedMerge(this.lanes.targetDir);
    // a run-wide max_duration is checked while lanes run, not only when one ends
    if (this.s.limits.maxDurationMs !== null) this.timer = setInterval(() => this.checkLimits(), 1000);
    try {
      // lanes a crash left: merging ones finish their merge, running ones go on, merged ones are tidied (a blocked one keeps a worktree only when its work could not be committed)
      for (const lane of this.lanes.lanes) {
        if (lane.status === "merging") await this.settle(lane.task, await this.loopFor(lane.task).run());
        else if (lane.status === "running") this.startLoop(lane.task);
        else if (lane.status === "merged") tidyLane({ repo: this.o.info.workdir, checkpoint: () => this.checkpoint() }, lane);
      }
      for (;;) {
        if (!this.interrupted && !this.limit) await this.schedule();
        if (this.running.size === 0) break;
        const { task, result } = await Promise.race(this.running.values());
        this.running.delete(task);
        await this.settle(task, result);
      }
      await gitSettled();
    } finally {
      if (this.timer) clearInterval(this.timer);
      clearTimeout(this.checkpointTimer);
      this.checkpointDue = false;
      for (const loop of this.loops.values()) loop.close();
    }
    this.s.elapsedMs = this.elapsed();
    if (this.interrupted) return this.stopInterrupted();
    if (this.limit) return this.stopAtLimit(this.limit);
    return this.finish();
  }

  /** Start lanes for the tasks that are ready, as many as there are free lanes. */
  private async schedule(): Promise<void> {
    const { tasks, blocked } = blockDependents(this.s.tasks ?? []);
    this.s.tasks = tasks;
    for (const b of blocked) this.emit({ type: "task.updated", task: b.task, status: "blocked", attempts: tasks.find((t) => t.id === b.task)!.attempts, reason: b.reason });
    const view = { tasks, running: this.lanes.lanes.filter((l) => l.status === "running" || l.status === "merging").map((l) => l.task), parallel: this.lanes.parallel, order: this.o.machine.tasks!.order, only: onlyTaskOf(this.o.machine, this.s) };
    for (const id of readyTasks(view)) {
      this.targetHead ??= (await revParse(this.lanes.targetDir, "HEAD")) ?? "HEAD";
      const base = this.targetHead;
      const name = laneName(id);
      const lane = { task: id, branch: `phaseloop/${this.s.runId}/${name}`, worktree: join(this.o.info.workdir, ".phaseloop", "lanes", this.s.runId, name), base, status: "running" as const, iteration: 0, phase: null, reason: null, conflicts: [], rebased: false, verify: null, tokens: 0, cost_usd: 0 };
      this.lanes.lanes = [...this.lanes.lanes.filter((l) => l.task !== id), lane];
      this.emit({ type: "lane.started", task: id, branch: lane.branch, worktree: lane.worktree, base });
      this.checkpoint();
      this.startLoop(id);
    }
  }

  /** A lane's loop, in its worktree (made first: the lane's git work runs beside the other lanes' loops). */
  private startLoop(task: string): void {
    const lane = this.lanes.lanes.find((l) => l.task === task)!;
    const run = async (): Promise<{ task: string; result: RunResult }> => {
      const made = await addWorktree(this.o.info.workdir, lane.worktree!, lane.branch, lane.base);
      if (!made.ok) return { task, result: { exitCode: 3, outcome: "blocked", snapshot: this.s, setupError: `cannot make its worktree: ${made.err}` } as RunResult };
      if (this.interrupted) return { task, result: { exitCode: 130, outcome: "interrupted", snapshot: this.s } };
      return { task, result: await this.loopFor(task).run() };
    };
    this.running.set(task, run());
  }

  private loopFor(task: string): LaneLoop {
    const known = this.loops.get(task);
    if (known) return known;
    const lane = this.lanes.lanes.find((l) => l.task === task)!;
    const loop = new LaneLoop({
      machine: this.o.machine,
      runDir: this.o.store.dir,
      info: this.o.info,
      env: this.o.env,
      sandbox: this.o.sandbox,
      run: this.s,
      task: this.s.tasks!.find((t) => t.id === task)!,
      tasks: this.s.tasks!,
      worktree: lane.worktree ?? join(this.o.info.workdir, ".phaseloop", "lanes", this.s.runId, laneName(task)),
      onEvent: (e) => this.laneEvent(task, e),
    });
    if (this.interrupted) loop.controller.abort(this.interrupted);
    this.loops.set(task, loop);
    return loop;
  }

  /** A lane's loop ended: merge its task, block it, or keep it for resume. */
  private async settle(task: string, result: RunResult & { setupError?: string }): Promise<void> {
    const lane = this.lanes.lanes.find((l) => l.task === task)!;
    if (result.outcome === "interrupted" && (this.interrupted || !this.limit)) return; // resumed later
    const source = this.o.machine.tasks!.source;
    const end: LaneEnd = await finishLane({
      lane,
      result,
      loop: this.loops.get(task),
      repo: this.o.info.workdir,
      targetDir: this.lanes.targetDir,
      into: this.lanes.into,
      title: this.s.tasks!.find((t) => t.id === task)?.title ?? task,
      runId: this.s.runId,
      stopped: this.limit,
      emit: (e) => this.emit(e),
      checkpoint: () => this.checkpoint(),
      verifyAgain: (phase) => this.loopFor(task).verifyAgain(phase),
      // the task file says a task is done in the commit that merges it (written on the merged
      // result: lanes writing it each would conflict)
      writeBack: source.kind === "json" && source.writeBack ? (dir, attempts) => {
        try {
          writeBackTask(this.o.machine.tasks!, dir, { task, status: "done", attempts, reason: null });
          return source.file;
        } catch (error) {
          this.emit({ type: "note", level: "warning", message: `cannot write task ${task} back: ${(error as Error).message}` });
          return undefined;
        }
      } : undefined,
    });
    if (end.head) this.targetHead = end.head;
    const t = this.s.tasks!.find((x) => x.id === task)!;
    t.attempts = Math.max(t.attempts, end.attempts);
    if (end.status === "done") {
      t.status = "done";
      t.reason = null;
      this.s.lastDoneTask = task;
    } else if (end.status === "blocked") {
      t.status = "blocked";
      t.reason = end.reason;
      t.notes = [...t.notes, `[BLOCKED] ${end.reason}`];
    }
    if (end.status !== "pending") this.emit({ type: "task.updated", task, status: t.status, attempts: t.attempts, reason: t.reason });
    this.loops.get(task)?.close();
    this.loops.delete(task);
    this.checkpoint();
  }

  /** A lane's event: numbered into the run's log with the task's id, and shown. */
  private laneEvent(task: string, e: RunEvent): void {
    const lane = this.lanes.lanes.find((l) => l.task === task);
    const { v: _v, seq: _seq, at: _at, run: _run, ...rest } = e as RunEvent & Record<string, unknown>;
    let type: string = e.type;
    if (type === "run.started" || type === "run.resumed") return;
    if (type === "run.finished") type = "lane.finished";
    else if (type === "run.interrupted") type = "lane.interrupted";
    // the run says when a task is done or blocked: once it is merged, or its lane ended
    else if (type === "task.updated" && (e as { status?: string }).status !== "pending") return;
    if (lane) {
      if (e.type === "iteration.started") lane.iteration = e.iteration;
      else if (e.type === "phase.started") lane.phase = e.phase;
      else if (e.type === "phase.finished") {
        lane.phase = null;
        lane.verify = e.phase;
        lane.tokens += e.tokens;
        lane.cost_usd += e.cost_usd;
        this.s.tokens += e.tokens;
        this.s.costUsd += e.cost_usd;
        this.checkLimits();
      }
    }
    this.emit({ ...rest, type, task } as EventInput);
    if (type !== "phase.output") this.scheduleCheckpoint();
  }

  private elapsed(): number {
    return this.elapsedBefore + (Date.now() - this.startedAt);
  }

  /** Run-wide limits over all lanes: once one is reached, every lane stops. */
  private checkLimits(): void {
    if (this.limit || this.interrupted) return;
    const l = this.s.limits;
    this.limit = sharedLimitReached({ maxDurationMs: l.maxDurationMs, budgetTokens: l.budgetTokens, budgetCostUsd: l.budgetCostUsd }, { tokens: this.s.tokens, costUsd: this.s.costUsd, elapsedMs: this.elapsed() });
    if (this.limit) for (const loop of this.loops.values()) loop.controller.abort("limit");
  }

  private emit(e: EventInput): void {
    this.log.emit(e, this.pending);
  }

  /**
   * The run's checkpoint after lanes' events: at most every CHECKPOINT_MS (each
   * lane has checkpointed its own state already; this one says where the lanes
   * are for `status`, and carries their events into the run's log).
   */
  private scheduleCheckpoint(): void {
    if (this.checkpointDue) return;
    this.checkpointDue = true;
    this.checkpointTimer = setTimeout(() => {
      this.checkpointDue = false;
      this.checkpoint();
    }, CHECKPOINT_MS);
  }

  private checkpoint(): void {
    // once the run's machine has taken over, the checkpoint is its
    if (this.handedOver) return;
    this.s.elapsedMs = this.elapsed();
    this.s.lastAt = Date.now();
    this.log.checkpoint(this.s, this.pending.splice(0));
  }

  private stopInterrupted(): RunResult {
    const s = this.s;
    s.status = "interrupted";
    this.emit({ type: "run.interrupted", signal: this.interrupted ?? "SIGINT", iteration: s.iteration, phase: null });
    this.checkpoint();
    this.log.flush();
    writeSummary(this.o.store, this.o.info, s);
    return { exitCode: 130, outcome: "interrupted", snapshot: s };
  }

  private async stopAtLimit(reason: StopReason): Promise<RunResult> {
    const s = this.s;
    s.status = "done";
    s.awaiting = null;
    s.outcome = { outcome: "stopped", reason };
    s.iteration = this.lanes.lanes.reduce((n, l) => n + l.iteration, 0);
    this.emit({ type: "run.finished", outcome: "stopped", reason, exit_code: exitCodeFor("stopped"), iterations: s.iteration, tokens: s.tokens, cost_usd: s.costUsd, elapsed_ms: s.elapsedMs });
    this.checkpoint();
    this.log.flush();
    await this.tidy();
    writeSummary(this.o.store, this.o.info, s);
    return { exitCode: exitCodeFor("stopped"), outcome: "stopped", snapshot: s };
  }

  /**
   * The queue is finished: the run's machine takes over in the target, where
   * everything is merged. It finds every task done (and runs the final gate) or
   * some blocked, and ends the run as a single loop would.
   */
  private async finish(): Promise<RunResult> {
    const s = this.s;
    const q = queueState({ tasks: s.tasks ?? [], running: [], parallel: this.lanes.parallel, order: this.o.machine.tasks!.order, only: onlyTaskOf(this.o.machine, s) });
    if (q.kind === "working") throw new Error("INTERNAL: the lanes ended with tasks still to start");
    if (!s.iterationOpen && s.awaiting === null) {
      s.iteration = Math.max(s.iteration, this.lanes.lanes.reduce((n, l) => n + l.iteration, 0));
      s.limits.maxIterations = Math.max(s.limits.maxIterations, s.iteration + 1);
      s.currentTask = null;
    }
    s.status = "interrupted";
    this.checkpoint();
    this.log.flush();
    this.handedOver = true;
    const runner = createRunner({ machine: this.o.machine, store: this.o.store, info: { ...this.o.info, workdir: this.lanes.targetDir }, reporter: this.o.reporter, env: this.o.env, signal: this.o.signal, sandbox: this.o.sandbox, recordedIterations: this.o.recordedIterations }, s, this.log.seq);
    const result = await runner.run({ type: "resumed", at: Date.now() });
    if (result.snapshot.status === "done") await this.tidy();
    return result;
  }

  /** The run is over: phaseloop's own checkout of an `--into` branch goes, and the run's empty lanes folder. */
  private async tidy(): Promise<void> {
    const workdir = this.o.info.workdir;
    if (this.lanes.targetDir !== workdir) await removeWorktree(workdir, this.lanes.targetDir);
    for (const dir of [join(workdir, ".phaseloop", "lanes", this.s.runId), join(workdir, ".phaseloop", "lanes")]) {
      try {
        rmdirSync(dir);
      } catch {
        // not empty (a worktree kept because its work could not be committed), or gone
      }
    }
  }
}
