/**
 * The imperative shell around the machine: it feeds `transition` events and
 * hands the effects it returns to their modules (phase-runner, run-hooks,
 * run-tasks), each a function of the effect and a RunContext; writes the checkpoint after every transition, and
 * reports run events through the event log.
 */
import { isoNow, type Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { transition } from "../machine/transition.ts";
import { exitCodeFor } from "../machine/stop-logic.ts";
import type { Effect, Machine, MachineEvent, Snapshot, TaskItem } from "../machine/types.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { ChangeTracker } from "../changes/change-tracker.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { askQuestion, type AnswerSource } from "./ask-question.ts";
import { loadIterationBaseline, saveIterationBaseline, type IterationRecord } from "./checkpoint.ts";
import { eventForEffect } from "./effect-events.ts";
import { EventLog, type EventInput } from "./event-log.ts";
import { runPhase } from "./phase-runner.ts";
import { runSubPipeline } from "./sub-pipeline.ts";
import { inheritedEnv, type ProcessEnv, type RunContext, type RunResult } from "./run-context.ts";
import type { Reporter, RunEvent, RunOutcome } from "./run-events.ts";
import { runHook } from "./run-hooks.ts";
import type { RunInfo } from "./run-info.ts";
import { loadRunTasks, writeRunTask } from "./run-tasks.ts";
import { writeSummary } from "./write-summary.ts";

export interface RunnerOptions {
  /** The world the run reaches through: the machine it runs on, unless given. */
  host?: Host;
  machine: Machine;
  store: RunStore;
  info: RunInfo;
  reporter: Reporter;
  env: ProcessEnv;
  /** Tasks read before the run started (answering the machine's tasks.load). */
  tasks?: TaskItem[];
  /** Iterations iterations.jsonl already holds (a resumed run). */
  recordedIterations?: Set<number>;
  signal: AbortSignal;
  /** `--sandbox` from the command line. */
  sandbox?: SandboxMode;
  /** Answers to an ask phase's question: given on the command line, or asked at a terminal. */
  answers?: AnswerSource;
}

export type { RunResult };

/**
 * The one place a runner is made: a run's (start, resume), a sub-pipeline's
 * and a lane's (each a child snapshot with its own store and checkpoint).
 */
export function createRunner(o: RunnerOptions, snapshot: Snapshot, seq: number): Runner {
  return new Runner(o, snapshot, seq);
}

/**
 * A child snapshot: a machine inside a run (a sub-pipeline's, a lane's loop),
 * driven by a runner of its own over its own store and checkpoint, from its
 * start, or on from its checkpoint (`resumed`).
 */
export function runChild(o: RunnerOptions, snapshot: Snapshot, seq: number, resumed: boolean, preface?: Record<string, unknown>[]): Promise<RunResult> {
  if (resumed) snapshot.status = "interrupted";
  const at = (o.host ?? nodeHost).clock.now();
  return createRunner(o, snapshot, seq).run(resumed ? { type: "resumed", at } : { type: "start", at }, preface);
}

export class Runner {
  readonly o: RunnerOptions;
  snapshot: Snapshot;
  private readonly events: EventLog;
  /** The iteration's changes, when the pipeline measures them. */
  private readonly changes: ChangeTracker | undefined;
  private interrupted: string | undefined;
  /** iterations.jsonl records waiting for the next checkpoint. */
  private readonly iterationRecords: IterationRecord[] = [];
  private readonly env: (...extra: (ProcessEnv | undefined)[]) => ProcessEnv;
  private readonly answers: AnswerSource;
  private readonly host: Host;

  constructor(o: RunnerOptions, snapshot: Snapshot, seq: number) {
    this.o = o;
    this.host = o.host ?? nodeHost;
    this.env = inheritedEnv(o.env);
    this.snapshot = snapshot;
    this.answers = o.answers ?? {};
    this.events = new EventLog(o.store, o.reporter, o.info.run_id, seq, o.recordedIterations, this.host.clock);
    if (o.machine.measuresChanges) this.changes = new ChangeTracker(this.host, o.info.workdir, snapshot.iterationOpen ? loadIterationBaseline(o.store, snapshot.iteration) : undefined);
    o.signal.addEventListener("abort", () => {
      this.interrupted ??= String(o.signal.reason ?? "SIGINT");
    });
  }

  /** Drive the machine from `first` until it stops or is interrupted. */
  async run(first: MachineEvent, preface: Record<string, unknown>[] = []): Promise<RunResult> {
    let event: MachineEvent | undefined = first;
    const log: RunEvent[] = [];
    for (const p of preface) this.events.emit(p as EventInput, log);
    // members of a parallel group run at once: their results come back as they end
    const inflight = new Map<number, Promise<{ id: number; event: MachineEvent | undefined }>>();
    let nextId = 0;
    for (;;) {
      if (!event) {
        if (inflight.size === 0) break;
        const settled = await Promise.race(inflight.values());
        inflight.delete(settled.id);
        event = settled.event;
        if (!event) {
          // a member stopped by an interrupt: the others are drained first, so none that finished is lost
          if (this.interrupted && inflight.size === 0) event = { type: "interrupted", at: this.host.clock.now(), signal: this.interrupted };
          continue;
        }
      }
      const { snapshot, effects } = transition(this.o.machine, this.snapshot, event);
      this.snapshot = snapshot;
      event = undefined;
      // events reported while carrying out effects are logged with the next checkpoint;
      // the ones the transition itself implies are logged now, with the checkpoint
      const now: RunEvent[] = log.splice(0);
      // run.finished is reported last, after the end hooks have run
      for (const e of effects) if (e.type !== "stop") this.logEffect(e, now);
      this.events.checkpoint(this.snapshot, now, this.iterationRecords.splice(0));
      if (snapshot.status === "interrupted") break;
      for (const effect of effects) {
        if (effect.type === "phase.run" && effect.group !== undefined) {
          const id = nextId++;
          inflight.set(id, this.perform(effect, log).then((settled) => ({ id, event: settled })));
          continue;
        }
        const next = await this.perform(effect, log);
        if (next) event = next;
      }
      if (snapshot.status === "done") {
        for (const e of effects) if (e.type === "stop") this.logEffect(e, log);
        break;
      }
      if (this.interrupted && inflight.size === 0) {
        event = { type: "interrupted", at: this.host.clock.now(), signal: this.interrupted };
      }
    }
    const pendingLog = log.splice(0);
    const s = this.snapshot;
    if (s.status === "interrupted") {
      this.events.emit({ type: "run.interrupted", signal: this.interrupted ?? "SIGINT", iteration: s.iteration, phase: s.awaiting?.kind === "phase" || s.awaiting?.kind === "retry" ? s.awaiting.phase : null }, pendingLog);
      this.events.checkpoint(s, pendingLog);
      this.events.flush();
      writeSummary(this.o.store, this.o.info, s, this.host);
      return { exitCode: 130, outcome: "interrupted", snapshot: s };
    }
    if (pendingLog.length) this.events.checkpoint(s, pendingLog);
    this.events.flush();
    writeSummary(this.o.store, this.o.info, s, this.host);
    if (s.status === "waiting" && s.awaiting?.kind === "answer") return { exitCode: 3, outcome: "awaiting", snapshot: s };
    const outcome = (s.outcome?.outcome ?? "failed") as RunOutcome;
    return { exitCode: exitCodeFor(outcome), outcome, snapshot: s };
  }

  /**
   * Log the run event an effect implies. iteration.end also makes a record
   * for iterations.jsonl, written like the events: carried by the checkpoint,
   * appended after it.
   */
  private logEffect(e: Effect, log: RunEvent[]): void {
    const s = this.snapshot;
    const event = eventForEffect(e, s);
    // a run that measures no changes says so, rather than "no files changed"
    if (event?.type === "iteration.finished" && !this.o.machine.measuresChanges) event.measured = false;
    if (event) this.events.emit(event, log);
    if (e.type === "iteration.end") this.iterationRecords.push({ ...e.record, at: isoNow(this.host.clock), tokens: s.tokens, cost_usd: s.costUsd });
  }

  /** What an effect works with; the events it reports go to `log`. */
  private context(log: RunEvent[]): RunContext {
    const { machine, store, info, signal } = this.o;
    return {
      host: this.host,
      machine,
      store,
      info,
      signal,
      sandboxFlag: this.o.sandbox,
      snapshot: this.snapshot,
      changes: this.changes,
      env: this.env,
      emit: (event) => this.events.emit(event, log),
      interrupted: () => this.interrupted,
    };
  }

  /** Carry out one effect; returns the event that answers it, if any. */
  private async perform(e: Effect, log: RunEvent[]): Promise<MachineEvent | undefined> {
    switch (e.type) {
      case "iteration.begin":
        if (this.changes) saveIterationBaseline(this.o.store, e.iteration, this.changes.beginIteration());
        return undefined;
      case "tasks.load":
        return loadRunTasks(this.context(log), this.o.tasks);
      case "task.update":
        this.changes?.touched();
        writeRunTask(e, this.context(log));
        return undefined;
      case "wait":
        await this.host.clock.sleep(e.ms, this.o.signal);
        return this.interrupted ? undefined : { type: "retry.fired", at: this.host.clock.now() };
      case "hook.run":
        this.changes?.touched();
        return runHook(e, this.context(log));
      case "question.ask":
        this.changes?.touched(); // a person may edit files while they answer
        return askQuestion(e, this.context(log), this.answers);
      case "phase.run": {
        if (e.delayMs) {
          // a group member's retry waits beside the others
          await this.host.clock.sleep(e.delayMs, this.o.signal);
          if (this.interrupted) return undefined;
        }
        // a sub-pipeline is a child snapshot driven over its own store and checkpoint, with this run's options
        const result = e.kind === "pipeline" ? await runSubPipeline(e, this.context(log), (o, snapshot, seq, resumed, preface) => runChild({ ...this.o, ...o, tasks: undefined }, snapshot, seq, resumed, preface)) : await runPhase(e, this.context(log));
        return result && { type: "phase.finished", at: this.host.clock.now(), phase: e.phase, attempt: e.attempt, result };
      }
      default:
        return undefined;
    }
  }
}
