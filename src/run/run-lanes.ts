/**
 * A task queue worked in parallel lanes: the shell of the lane scheduler
 * (machine/lanes.ts). The scheduler decides; this file only carries out its
 * effects and tells it what happened. Each lane is a git worktree under
 * `.phaseloop/lanes/` on a branch of its own from the target's head, where its
 * loop runs as a child snapshot with its own checkpoint (lane-loop.ts); a
 * task its loop finished is committed and merged into the target
 * (lanes/lane-merge.ts). The run's checkpoint (state.json) holds the queue and every
 * lane. When the queue is finished, the run's own machine takes over on the
 * merged result: the final gate, the end hooks, the outcome.
 *
 * The git work on the target (merges, rebases, keeping a lane's work) and
 * the events and checkpoints it implies are carried out one effect at a time,
 * in the order the scheduler gave them; the lanes' loops run beside it.
 */
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { laneBoard, laneTransition, type LaneBoard, type LaneEffect, type LaneEvent } from "../machine/lanes.ts";
import type { Machine, Snapshot } from "../machine/types.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { EventLog, type EventInput } from "./event-log.ts";
import type { ProcessEnv } from "./run-context.ts";
import type { Reporter, RunEvent } from "./run-events.ts";
import type { RunInfo } from "./run-info.ts";
import { createRunner, type RunResult } from "./run-pipeline.ts";
import { writeSummary } from "./write-summary.ts";
import { writeBackTask } from "./load-tasks.ts";
import { exitCodeFor } from "../machine/stop-logic.ts";
import { addWorktree, gitSettled, holds, removeWorktree, revParse } from "../lanes/lane-git.ts";
import { laneName } from "../lanes/lane-runner.ts";
import { LaneLoop, laneReason } from "./lane-loop.ts";
import type { Checkpoint } from "./checkpoint.ts";
import { abortUnfinishedMerge, keepLane, mergeLane, rebaseLane, tidyLane } from "../lanes/lane-merge.ts";

const CHECKPOINT_MS = 100;

export interface LanesOptions {
  /** The world the run reaches through: the machine it runs on, unless given. */
  host?: Host;
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

type End = Extract<LaneEffect, { type: "lanes.handover" | "lanes.interrupted" | "stop" }>;

class LaneRun {
  private readonly o: LanesOptions;
  private readonly host: Host;
  private board: LaneBoard;
  private readonly log: EventLog;
  private readonly pending: RunEvent[] = [];
  private readonly loops = new Map<string, LaneLoop>();
  /** Lanes rebased whose loop's checkpoint is open again at the phase to verify again. */
  private readonly reopened = new Map<string, Checkpoint>();
  /** The effects carried out one at a time, in order. */
  private chain: Promise<void> = Promise.resolve();
  /** Lanes' loops under way beside the chain. */
  private readonly running = new Set<Promise<void>>();
  private failure: unknown;
  private end: End | undefined;
  private ended!: () => void;
  private readonly over = new Promise<void>((resolve) => (this.ended = resolve));
  private checkpointDue = false;
  private checkpointTimer: unknown;
  private handedOver = false;
  private timer: unknown;

  constructor(o: LanesOptions) {
    this.o = o;
    this.host = o.host ?? nodeHost;
    const s = structuredClone(o.snapshot);
    s.status = "running";
    this.board = laneBoard(s);
    this.log = new EventLog(o.store, o.reporter, o.info.run_id, o.seq, o.recordedIterations, this.host.clock);
    o.signal.addEventListener("abort", () => this.dispatch({ type: "interrupted", at: this.host.clock.now(), signal: String(o.signal.reason ?? "SIGINT") }));
  }

  /** Every second, the scheduler is told the time. */
  private tick(): void {
    this.timer = this.host.clock.setTimer(() => {
      this.tick();
      this.dispatch({ type: "tick", at: this.host.clock.now() });
    }, 1000);
  }

  private get s(): Snapshot {
    return this.board.s;
  }

  /** The run's snapshot as of now: the time since the scheduler's last event counts. */
  private now(): Snapshot {
    const s = this.s;
    const at = this.host.clock.now();
    return { ...s, elapsedMs: s.elapsedMs + (s.lastAt !== null && at > s.lastAt ? at - s.lastAt : 0), lastAt: at };
  }

  private lane(task: string) {
    return this.s.lanes!.lanes.find((l) => l.task === task)!;
  }

  async run(preface: Record<string, unknown>[]): Promise<RunResult> {
    for (const p of preface) this.emit(p as EventInput);
    this.checkpoint();
    const lanes = this.s.lanes!;
    await abortUnfinishedMerge(this.host, lanes.targetDir);
    // a run-wide max_duration is checked while lanes run, not only when one ends
    if (this.s.limits.maxDurationMs !== null) this.tick();
    try {
      const head = (await revParse(this.host, lanes.targetDir, "HEAD")) ?? "HEAD";
      const names = Object.fromEntries((this.s.tasks ?? []).map((t) => [t.id, { branch: `phaseloop/${this.s.runId}/${laneName(t.id)}`, worktree: join(this.o.info.workdir, ".phaseloop", "lanes", this.s.runId, laneName(t.id)) }]));
      this.dispatch({ type: "lanes.begin", at: this.host.clock.now(), head, names });
      await this.over;
      await this.chain;
      while (this.running.size > 0) await Promise.all(this.running);
      await gitSettled(this.host);
      await this.chain; // what tidying reported
    } finally {
      if (this.timer !== undefined) this.host.clock.clearTimer(this.timer);
      if (this.checkpointTimer !== undefined) this.host.clock.clearTimer(this.checkpointTimer);
      this.checkpointDue = false;
      for (const loop of this.loops.values()) loop.close();
    }
    if (this.failure !== undefined) throw this.failure;
    const end = this.end!;
    if (end.type === "lanes.interrupted") return this.stopInterrupted(end.signal);
    if (end.type === "stop") return this.stopAtLimit();
    return this.handOver();
  }

  /** Tell the scheduler what happened; carry out what it asks. */
  private dispatch(event: LaneEvent): void {
    if (this.end && event.type !== "lane.tidied") return;
    let next: ReturnType<typeof laneTransition>;
    try {
      next = laneTransition(this.o.machine, this.board, event);
    } catch (error) {
      return this.fail(error);
    }
    const { board, effects } = next;
    this.board = board;
    // what only records the new state is written with it, at once (a checkpoint never holds a lane
    // or a task its log has not told of); the work the state asks for is chained
    let record = false;
    for (const fx of effects) {
      // every lane stops at once, whatever the chain is doing
      if (fx.type === "lanes.abort") for (const loop of this.loops.values()) loop.controller.abort(this.board.interrupted ?? "limit");
      else if (fx.type === "task.update") {
        this.emit({ type: "task.updated", task: fx.task, status: fx.status, attempts: fx.attempts, reason: fx.reason });
        record = true;
      } else {
        if (fx.type === "lane.open") {
          const lane = this.lane(fx.task);
          this.emit({ type: "lane.started", task: fx.task, branch: lane.branch, worktree: lane.worktree, base: lane.base });
          record = true;
        }
        this.then(() => this.perform(fx));
      }
    }
    if (record) this.checkpoint();
    if (event.type === "lane.tidied") this.then(async () => this.checkpoint());
  }

  private then(step: () => Promise<void>): void {
    this.chain = this.chain.then(step).catch((error: unknown) => this.fail(error));
  }

  /** An error of phaseloop's own: every lane stops, and the run ends with it. */
  private fail(error: unknown): void {
    this.failure ??= error;
    for (const loop of this.loops.values()) loop.controller.abort("error");
    this.finish({ type: "lanes.interrupted", signal: "error" });
  }

  private finish(end: End): void {
    this.end ??= end;
    this.ended();
  }

  private async perform(fx: LaneEffect): Promise<void> {
    const lanes = this.s.lanes!;
    switch (fx.type) {
      case "lane.resume": {
        // what the lane's loop did that the run's checkpoint had not yet taken from its events
        const missed = this.loopFor(fx.task).missedProgress(this.lane(fx.task), this.host.clock.now());
        if (missed) this.dispatch(missed);
        this.startLoop(fx.task);
        return;
      }
      case "lane.open":
        this.startLoop(fx.task);
        return;
      case "lane.verify": {
        const loop = this.loopFor(fx.task);
        const reopened = this.reopened.get(fx.task) ?? loop.reopen(fx.phase);
        this.reopened.delete(fx.task);
        this.checkpoint();
        this.background(fx.task, () => loop.verifyAgain(fx.phase, reopened));
        return;
      }
      case "lane.merge": {
        this.checkpoint();
        const lane = this.lane(fx.task);
        // a lane whose loop is open again and whose branch git rebased (a crash came before the run recorded it): verified
        // first, as it would have been; open again but not rebased (a crash came before git rebased it), the merge conflicts
        // again and the lane is rebased then
        if (fx.resumed && lane.verify && lane.worktree && this.loopFor(fx.task).checkpoint()?.snapshot.status !== "done" && (await holds(this.host, lane.worktree, lanes.into))) {
          this.emit({ type: "lane.conflict", task: fx.task, branch: lane.branch, into: lanes.into, files: lane.conflicts, action: "rebased" });
          this.dispatch({ type: "lane.rebased", at: this.host.clock.now(), task: fx.task });
          this.checkpoint();
          return;
        }
        const task = this.s.tasks!.find((t) => t.id === fx.task)!;
        const attempts = this.loopFor(fx.task).checkpoint()?.snapshot.tasks?.find((t) => t.id === fx.task)?.attempts ?? task.attempts;
        const source = this.o.machine.tasks!.source;
        const m = await mergeLane(this.host, {
          lane,
          repo: this.o.info.workdir,
          targetDir: lanes.targetDir,
          into: lanes.into,
          title: task.title,
          runId: this.s.runId,
          resumed: fx.resumed === true,
          // the task file says a task is done in the commit that merges it (written on the merged
          // result: lanes writing it each would conflict)
          writeBack: source.kind === "json" && source.writeBack ? (dir) => this.writeBack(fx.task, dir, attempts) : undefined,
        });
        if (m.kind === "merged") {
          this.emit({ type: "lane.merged", task: fx.task, branch: lane.branch, into: lanes.into, commit: m.commit, rebased: lane.rebased });
          this.dispatch({ type: "lane.merged", at: this.host.clock.now(), task: fx.task, commit: m.commit, attempts });
        } else if (m.kind === "failed") this.dispatch({ type: "lane.failed", at: this.host.clock.now(), task: fx.task, reason: m.reason });
        else {
          // conflicts once rebased (or without a worktree to rebase) block the lane; the first rebases it
          if (lane.rebased || !lane.worktree) this.emit({ type: "lane.conflict", task: fx.task, branch: lane.branch, into: lanes.into, files: m.files, action: "blocked" });
          this.dispatch({ type: "lane.conflict", at: this.host.clock.now(), task: fx.task, files: m.files });
        }
        return;
      }
      case "lane.rebase": {
        const lane = this.lane(fx.task);
        // the phase to verify again is open in the lane's checkpoint before git rebases the branch: a crash after that
        // resumes the lane into it (or, when git had not rebased it yet, merges, conflicts and rebases again), never finds
        // its loop done with a rebased branch to merge unverified
        const reopened = lane.verify ? this.loopFor(fx.task).reopen(lane.verify) : undefined;
        const r = await rebaseLane(this.host, lane, lanes.into);
        if (r.ok && reopened) this.reopened.set(fx.task, reopened);
        this.emit({ type: "lane.conflict", task: fx.task, branch: lane.branch, into: lanes.into, files: fx.files, action: r.ok ? "rebased" : "blocked" });
        this.dispatch(r.ok ? { type: "lane.rebased", at: this.host.clock.now(), task: fx.task } : { type: "lane.failed", at: this.host.clock.now(), task: fx.task, reason: r.reason, ...(r.conflicts ? { conflicts: r.conflicts } : {}) });
        // recorded at once: git has rebased the branch, and a resumed run must know to verify it again
        if (r.ok) this.checkpoint();
        return;
      }
      case "lane.keep": {
        const lane = this.lane(fx.task);
        const title = this.s.tasks!.find((t) => t.id === fx.task)?.title ?? fx.task;
        const worktree = await keepLane(this.host, { repo: this.o.info.workdir, title, runId: this.s.runId, emit: (e) => this.emit(e) }, lane, fx.status, fx.reason);
        this.dispatch({ type: "lane.kept", at: this.host.clock.now(), task: fx.task, status: fx.status, reason: fx.reason, worktree });
        this.closeLoop(fx.task);
        if (fx.status === "stopped") this.checkpoint();
        return;
      }
      case "lane.tidy":
        this.closeLoop(fx.task);
        tidyLane(this.host, this.o.info.workdir, this.lane(fx.task), () => this.dispatch({ type: "lane.tidied", at: this.host.clock.now(), task: fx.task }));
        return;
      case "lanes.handover":
      case "lanes.interrupted":
      case "stop":
        this.finish(fx);
        return;
      default:
        return;
    }
  }

  /** A lane's loop, in its worktree (made first: the lane's git work runs beside the other lanes' loops). */
  private startLoop(task: string): void {
    const lane = this.lane(task);
    this.background(task, async () => {
      const made = await addWorktree(this.host, this.o.info.workdir, lane.worktree!, lane.branch, lane.base);
      if (!made.ok) return { setupError: `cannot make its worktree: ${made.err}` };
      if (this.board.interrupted) return { exitCode: 130, outcome: "interrupted", snapshot: this.s };
      return this.loopFor(task).run();
    });
  }

  /** A lane's loop runs beside the chain; how it ended goes to the scheduler. */
  private background(task: string, work: () => Promise<RunResult | { setupError: string }>): void {
    const p = (async () => {
      const result = await work();
      if ("setupError" in result) return this.dispatch({ type: "lane.failed", at: this.host.clock.now(), task, reason: result.setupError });
      const attempts = result.snapshot.tasks?.find((t) => t.id === task)?.attempts ?? 0;
      if (result.outcome === "interrupted") return this.dispatch({ type: "lane.loop.ended", at: this.host.clock.now(), task, end: "interrupted", attempts });
      const done = result.outcome === "complete" && result.snapshot.tasks?.find((t) => t.id === task)?.status === "done";
      this.dispatch(done ? { type: "lane.loop.ended", at: this.host.clock.now(), task, end: "done", attempts } : { type: "lane.loop.ended", at: this.host.clock.now(), task, end: "not-done", reason: laneReason(result, task), attempts });
    })()
      .catch((error: unknown) => this.fail(error))
      .finally(() => this.running.delete(p));
    this.running.add(p);
  }

  private loopFor(task: string): LaneLoop {
    const known = this.loops.get(task);
    if (known) return known;
    const lane = this.lane(task);
    const loop = new LaneLoop({
      host: this.host,
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
    if (this.board.interrupted) loop.controller.abort(this.board.interrupted);
    this.loops.set(task, loop);
    return loop;
  }

  private closeLoop(task: string): void {
    this.loops.get(task)?.close();
    this.loops.delete(task);
  }

  private writeBack(task: string, dir: string, attempts: number): string | undefined {
    try {
      writeBackTask(this.o.machine.tasks!, dir, { task, status: "done", attempts, reason: null }, this.host.files);
      return (this.o.machine.tasks!.source as { file: string }).file;
    } catch (error) {
      this.emit({ type: "note", level: "warning", message: `cannot write task ${task} back: ${(error as Error).message}` });
      return undefined;
    }
  }

  /** A lane's event: what it says of the lane goes to the scheduler; it is numbered into the run's log with the task's id, and shown. */
  private laneEvent(task: string, e: RunEvent): void {
    const { v: _v, seq: _seq, at: _at, run: _run, ...rest } = e as RunEvent & Record<string, unknown>;
    let type: string = e.type;
    if (type === "run.started" || type === "run.resumed") return;
    if (type === "run.finished") type = "lane.finished";
    else if (type === "run.interrupted") type = "lane.interrupted";
    // the run says when a task is done or blocked: once it is merged, or its lane ended
    else if (type === "task.updated" && (e as { status?: string }).status !== "pending") return;
    if (e.type === "iteration.started") this.dispatch({ type: "lane.progress", at: this.host.clock.now(), task, iteration: e.iteration });
    else if (e.type === "phase.started") this.dispatch({ type: "lane.progress", at: this.host.clock.now(), task, phase: e.phase });
    else if (e.type === "phase.finished") this.dispatch({ type: "lane.progress", at: this.host.clock.now(), task, used: { phase: e.phase, tokens: e.tokens, costUsd: e.cost_usd } });
    this.emit({ ...rest, type, task } as EventInput);
    if (type !== "phase.output") this.scheduleCheckpoint();
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
    this.checkpointTimer = this.host.clock.setTimer(() => {
      this.checkpointDue = false;
      this.checkpoint();
    }, CHECKPOINT_MS);
  }

  private checkpoint(): void {
    // once the run's machine has taken over, the checkpoint is its
    if (this.handedOver) return;
    this.log.checkpoint(this.now(), this.pending.splice(0));
  }

  private stopInterrupted(signal: string): RunResult {
    const s = this.now();
    this.emit({ type: "run.interrupted", signal, iteration: s.iteration, phase: null });
    this.checkpoint();
    this.log.flush();
    writeSummary(this.o.store, this.o.info, s, this.host);
    return { exitCode: 130, outcome: "interrupted", snapshot: s };
  }

  private async stopAtLimit(): Promise<RunResult> {
    const s = this.now();
    const reason = s.outcome!.reason;
    this.emit({ type: "run.finished", outcome: "stopped", reason, exit_code: exitCodeFor("stopped"), iterations: s.iteration, tokens: s.tokens, cost_usd: s.costUsd, elapsed_ms: s.elapsedMs });
    this.checkpoint();
    this.log.flush();
    await this.tidy();
    writeSummary(this.o.store, this.o.info, s, this.host);
    return { exitCode: exitCodeFor("stopped"), outcome: "stopped", snapshot: s };
  }

  /**
   * The queue is finished: the run's machine takes over in the target, where
   * everything is merged. It finds every task done (and runs the final gate) or
   * some blocked, and ends the run as a single loop would.
   */
  private async handOver(): Promise<RunResult> {
    const s = structuredClone(this.now());
    this.checkpoint();
    this.log.flush();
    this.handedOver = true;
    const lanes = s.lanes!;
    const runner = createRunner({ host: this.host, machine: this.o.machine, store: this.o.store, info: { ...this.o.info, workdir: lanes.targetDir }, reporter: this.o.reporter, env: this.o.env, signal: this.o.signal, sandbox: this.o.sandbox, recordedIterations: this.o.recordedIterations }, s, this.log.seq);
    const result = await runner.run({ type: "resumed", at: this.host.clock.now() });
    if (result.snapshot.status === "done") await this.tidy();
    return result;
  }

  /** The run is over: phaseloop's own checkout of an `--into` branch goes, and the run's empty lanes folder. */
  private async tidy(): Promise<void> {
    const workdir = this.o.info.workdir;
    const targetDir = this.s.lanes!.targetDir;
    if (targetDir !== workdir) await removeWorktree(this.host, workdir, targetDir);
    for (const dir of [join(workdir, ".phaseloop", "lanes", this.s.runId), join(workdir, ".phaseloop", "lanes")]) {
      try {
        this.host.files.removeDir(dir);
      } catch {
        // not empty (a worktree kept because its work could not be committed), or gone
      }
    }
  }
}
