/**
 * One lane's loop: the run's machine over the queue of its one task, driven by
 * a Runner of its own in the lane's worktree, with its own checkpoint, event
 * log and phase logs under the run's `lanes/TASK/`. Its events reach the run
 * through `onEvent` (the lane runner numbers them into the run's log and shows
 * them with the task's id).
 */
import { join } from "node:path";
import { isoNow, type Host } from "../host/host.ts";
import { initialSnapshot } from "../machine/initial-snapshot.ts";
import type { LaneEvent } from "../machine/lanes.ts";
import type { LaneState, Machine, Snapshot, TaskItem, TaskState } from "../machine/types.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { RunStore } from "../runtime/run-store.ts";
import type { Checkpoint } from "./checkpoint.ts";
import type { ProcessEnv } from "./run-context.ts";
import type { RunEvent } from "./run-events.ts";
import type { RunInfo } from "./run-info.ts";
import { repairTornLogs } from "./read-run-state.ts";
import { runChild, type RunResult } from "./run-pipeline.ts";
import { laneName } from "../lanes/lane-runner.ts";
import { laneLimits, laneMachine } from "../lanes/schedule-lanes.ts";

export interface LaneSetup {
  host: Host;
  machine: Machine;
  /** The run's directory (the lane's is `lanes/NAME` inside it). */
  runDir: string;
  info: RunInfo;
  env: ProcessEnv;
  sandbox?: SandboxMode;
  /** The run's snapshot: its params, limits and facts. */
  run: Snapshot;
  task: TaskState;
  /** Every task of the run (the lane's queue holds its task's dependencies, done). */
  tasks: readonly TaskState[];
  worktree: string;
  onEvent(event: RunEvent): void;
}

export class LaneLoop {
  readonly task: string;
  readonly store: RunStore;
  readonly controller = new AbortController();
  private readonly o: LaneSetup;
  private readonly machine: Machine;

  constructor(o: LaneSetup) {
    this.o = o;
    this.task = o.task.id;
    this.machine = laneMachine(o.machine);
    const dir = join(o.runDir, "lanes", laneName(o.task.id));
    const files = o.host.files;
    files.mkdir(join(dir, "phases"));
    for (const name of ["events.jsonl", "iterations.jsonl"]) if (!files.exists(join(dir, name))) files.writeText(join(dir, name), "");
    this.store = new RunStore(o.worktree, o.info.run_id, dir, files);
  }

  /** The lane's checkpoint, if it wrote one. */
  checkpoint(): Checkpoint | undefined {
    const cp = this.store.readState<Checkpoint>();
    return cp && typeof cp === "object" && cp.snapshot && typeof cp.snapshot === "object" ? cp : undefined;
  }

  /** The phase its loop finished last, by its checkpoint's events not yet logged, then its own log (undefined before any). */
  lastFinishedPhase(cp: Checkpoint | undefined = this.checkpoint()): string | undefined {
    for (const e of [...(cp?.pending ?? [])].reverse()) if (e.type === "phase.finished") return e.phase;
    let text = "";
    try {
      text = this.store.files.readText(join(this.store.dir, "events.jsonl"));
    } catch {
      return undefined;
    }
    const lines = text.split("\n");
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        const e = JSON.parse(lines[i]!) as { type?: unknown; phase?: unknown };
        if (e.type === "phase.finished" && typeof e.phase === "string") return e.phase;
      } catch {
        // empty, or torn: look further back
      }
    }
    return undefined;
  }

  /**
   * A lane a crash left running: what its loop did that the run's checkpoint
   * had not yet taken from its events (they reach it at most every 100 ms),
   * from the lane's own checkpoint and log: the phase it finished last (the
   * one run again after a rebase) and what its phases used. Undefined when
   * the run knows it all.
   */
  missedProgress(lane: Pick<LaneState, "task" | "verify" | "tokens" | "cost_usd">, at: number): Extract<LaneEvent, { type: "lane.progress" }> | undefined {
    const cp = this.checkpoint();
    if (!cp) return undefined;
    const phase = this.lastFinishedPhase(cp) ?? lane.verify;
    const tokens = Math.max(0, cp.snapshot.tokens - lane.tokens);
    const costUsd = Math.max(0, cp.snapshot.costUsd - lane.cost_usd);
    if (!phase || (phase === lane.verify && tokens === 0 && costUsd === 0)) return undefined;
    return { type: "lane.progress", at, task: lane.task, used: { phase, tokens, costUsd } };
  }

  /** Run the lane from its start, or on from its checkpoint. */
  run(): Promise<RunResult> {
    const cp = this.checkpoint();
    if (!cp) return this.drive(this.firstSnapshot(), 0, false);
    this.repair(cp);
    const s = cp.snapshot;
    if (s.status === "done") return Promise.resolve({ exitCode: 0, outcome: s.outcome?.outcome ?? "failed", snapshot: s });
    return this.drive(s, Math.max(cp.seq, this.store.lastEventSeq()), true);
  }

  /**
   * Run `phase` again after the lane was rebased onto its target: the task's
   * last iteration is open again at that phase, so its rules decide anew.
   * The lane's checkpoint says so at once (`reopen`, before the run's
   * checkpoint records the lane running again), so that a crash resumes the
   * lane into that phase rather than finding its loop done.
   */
  verifyAgain(phase: string, reopened = this.reopen(phase)): Promise<RunResult> {
    return this.drive(reopened.snapshot, reopened.seq, true);
  }

  /** The lane's loop, open again at `phase` of the task's last iteration, written to its checkpoint. */
  reopen(phase: string): Checkpoint {
    const cp = this.checkpoint()!;
    const s = cp.snapshot;
    const t = s.tasks?.find((x) => x.id === this.task);
    if (t) {
      t.status = "pending";
      t.reason = null;
    }
    s.outcome = null;
    s.status = "interrupted";
    s.currentTask = this.task;
    s.iterationOpen = true;
    s.gateRunning = false;
    s.awaiting = { kind: "phase", phase, attempt: 1, seq: s.phaseSeq };
    // what the checkpoint carried is in the log first, so the new one carries nothing
    this.repair(cp);
    const reopened: Checkpoint = { snapshot: s, seq: Math.max(cp.seq, this.store.lastEventSeq()), pending: [], updated_at: isoNow(this.o.host.clock) };
    this.store.writeState(reopened);
    return reopened;
  }

  private firstSnapshot(): Snapshot {
    const r = this.o.run;
    const s = initialSnapshot(this.machine, { runId: r.runId, params: r.params, env: r.info.env, pipeline: r.info.pipeline, workdir: this.o.worktree });
    s.limits = laneLimits(r.limits);
    return s;
  }

  private drive(snapshot: Snapshot, seq: number, resumed: boolean): Promise<RunResult> {
    const t = this.o.task;
    // the lane's queue: its task, after the tasks it depends on (merged, so done)
    const item = (x: TaskState, done: boolean): TaskItem => ({ id: x.id, title: x.title, body: x.body, priority: x.priority, depends_on: x.depends_on, done, blocked: false, attempts: x.attempts, notes: x.notes });
    const byId = new Map(this.o.tasks.map((x) => [x.id, x]));
    const deps = new Set<string>();
    const add = (id: string) => {
      for (const d of byId.get(id)?.depends_on ?? []) if (!deps.has(d) && byId.has(d)) deps.add(d), add(d);
    };
    add(t.id);
    const queue = [...this.o.tasks.filter((x) => deps.has(x.id)).map((x) => item(x, true)), item(t, false)];
    const reporter = { onEvent: (e: RunEvent) => this.o.onEvent(e), close: async () => undefined };
    const info: RunInfo = { ...this.o.info, workdir: this.o.worktree };
    // the lane's loop is a child snapshot of the run, as a sub-pipeline is
    return runChild({ host: this.o.host, machine: this.machine, store: this.store, info, reporter, env: this.o.env, tasks: queue, signal: this.controller.signal, sandbox: this.o.sandbox, recordedIterations: this.store.recordedIterations() }, snapshot, seq, resumed);
  }

  /** What a crash lost of the lane's log is put back from its checkpoint (by seq: never twice). */
  private repair(cp: Checkpoint): void {
    // a line a crash tore is cut off, as resume does for the run's own (sealed, when a log cannot be read further up)
    const read = repairTornLogs(this.store.dir, this.o.info.run_id, this.store.files);
    if (!read.events || !read.iterations) this.store.sealTornLines();
    const last = this.store.lastEventSeq();
    this.store.events.appendMany((cp.pending ?? []).filter((e) => e.seq > last));
    const recorded = this.store.recordedIterations();
    this.store.iterations.appendMany((cp.pending_iterations ?? []).filter((r) => !recorded.has(r.iteration)));
  }

  close(): void {
    this.store.close();
  }
}

/** Why a lane's loop did not finish its task, in words. */
export function laneReason(result: RunResult, id: string): string {
  if (result.outcome === "awaiting") return "its loop asks a question, which a lane cannot wait for";
  const task = result.snapshot.tasks?.find((t) => t.id === id);
  if (task?.status === "blocked" && task.reason) return task.reason;
  const o = result.snapshot.outcome;
  return o ? `its loop ended ${o.outcome}: ${o.reason.message}` : `its loop ended ${result.outcome}`;
}
