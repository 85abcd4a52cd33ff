/**
 * The run's events on their way to events.jsonl, the checkpoint and the
 * reporter. Only the checkpoint must be on disk before the next effect starts,
 * and only as a line of the journal (see CheckpointFile): it carries the last
 * transition's events as `pending`, so appending them to events.jsonl,
 * reporting them and replacing state.json can wait until the next phase is
 * running (resume re-appends what a crash lost).
 */
import { isoNow, type HostClock } from "../host/host.ts";
import { nodeClock } from "../host/node-clock.ts";
import type { Snapshot } from "../machine/types.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { checkpointJson, type Checkpoint, type IterationRecord } from "./checkpoint.ts";
import { TRANSIENT_EVENT_TYPES, type Reporter, type RunEvent } from "./run-events.ts";

/** A run event before it is numbered and stamped. */
export type EventInput = Record<string, unknown> & { type: RunEvent["type"] };

export class EventLog {
  /** seq of the last event numbered. */
  seq: number;
  private readonly store: RunStore;
  private readonly reporter: Reporter;
  private readonly runId: string;
  private readonly unlogged: RunEvent[] = [];
  private readonly unloggedIterations: IterationRecord[] = [];
  private readonly reports: RunEvent[] = [];
  private flushScheduled = false;
  /** Whether the run has ended (then no next state file is prepared). */
  private done = false;

  /** Iterations iterations.jsonl already holds: a record is appended once, whatever a crash made run again. */
  private readonly recorded: Set<number>;
  /** Stamps the events and schedules the flush. */
  private readonly clock: HostClock;

  constructor(store: RunStore, reporter: Reporter, runId: string, seq: number, recorded: Set<number> = new Set(), clock: HostClock = nodeClock) {
    this.clock = clock;
    this.store = store;
    this.reporter = reporter;
    this.runId = runId;
    this.seq = seq;
    this.recorded = recorded;
  }

  /**
   * Number and stamp an event, add it to `log` (to be checkpointed) unless it
   * is transient, and queue it for the reporter.
   */
  emit(partial: EventInput, log: RunEvent[]): void {
    const transient = TRANSIENT_EVENT_TYPES.has(partial.type);
    const event = { v: 1, seq: transient ? 0 : ++this.seq, at: isoNow(this.clock), run: this.runId, ...partial } as RunEvent;
    if (!transient) log.push(event);
    this.reports.push(event);
    this.scheduleFlush();
  }

  /**
   * Write the checkpoint with `pending`, the events it accounts for, and the
   * iteration records it adds. What the previous checkpoint carried is
   * appended first, so nothing is ever only in memory.
   */
  checkpoint(snapshot: Snapshot, pending: RunEvent[], iterations: IterationRecord[] = []): void {
    this.done = snapshot.status === "done";
    this.flushEvents();
    const cp: Checkpoint = { snapshot, seq: this.seq, pending, updated_at: isoNow(this.clock) };
    if (iterations.length > 0) cp.pending_iterations = iterations;
    this.store.recordStateText(checkpointJson(cp));
    for (const e of pending) this.unlogged.push(e);
    for (const r of iterations) this.unloggedIterations.push(r);
    this.scheduleFlush();
  }

  /**
   * Replace state.json with the checkpoint recorded in the journal, append the
   * events not yet in the log, then report the events not yet reported. The
   * order keeps state.json at or ahead of the log, as it was when state.json
   * itself was the first thing written.
   */
  flush(): void {
    this.flushScheduled = false;
    this.store.state.settle();
    this.flushEvents();
    for (const event of this.reports.splice(0)) this.reporter.onEvent(event);
    if (!this.done) this.store.state.prepare();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    this.clock.defer(() => this.flush());
  }

  private flushEvents(): void {
    if (this.unloggedIterations.length > 0) {
      const fresh = this.unloggedIterations.splice(0).filter((r) => !this.recorded.has(r.iteration));
      for (const r of fresh) this.recorded.add(r.iteration);
      this.store.iterations.appendMany(fresh);
    }
    if (this.unlogged.length === 0) return;
    this.store.events.appendMany(this.unlogged.splice(0));
  }
}
