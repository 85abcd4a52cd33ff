import { expect } from "vitest";
import { compilePipeline } from "../../src/machine/compile-pipeline.ts";
import { initialSnapshot, transition } from "../../src/machine/transition.ts";
import { resolveParams } from "../../src/machine/resolve-params.ts";
import type { Effect, Machine, MachineEvent, PhaseResult, Snapshot, TaskItem } from "../../src/machine/types.ts";
import type { PipelineDoc } from "../../src/pipeline/spec.ts";

export function compile(doc: Omit<PipelineDoc, "phaseloop" | "name"> & { name?: string }, promptFiles: Record<string, string> = {}): Machine {
  const r = compilePipeline({ phaseloop: 1, name: "test", ...doc } as PipelineDoc, { promptFiles, file: "p.yaml" });
  expect(r.diagnostics).toEqual([]);
  return r.machine!;
}

export function start(machine: Machine, raw: Record<string, string> = {}): Snapshot {
  const { params, diagnostics } = resolveParams(machine, raw);
  expect(diagnostics).toEqual([]);
  return initialSnapshot(machine, { runId: "r1", params, pipeline: { name: machine.name, file: "/x/p.yaml", dir: "/x" }, workdir: "/w" });
}

export function result(over: Partial<PhaseResult> = {}): PhaseResult {
  return { exit_code: 0, output: {}, text: "", error: null, message: null, output_tail: "", tokens: 0, cost_usd: 0, duration_ms: 5, changes: ["a.txt"], jitter: 0.5, ...over };
}

export function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object" && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o)) deepFreeze(v);
  }
  return o;
}

/**
 * Drives a machine: keeps the snapshot, answers waits and non-blocking work,
 * and records every effect. Checks purity on every step.
 */
export class Driver {
  snapshot: Snapshot;
  effects: Effect[] = [];
  at = 1_000;
  readonly machine: Machine;
  constructor(machine: Machine, snapshot?: Snapshot) {
    this.machine = machine;
    this.snapshot = snapshot ?? start(machine);
  }
  send(event: MachineEvent): Effect[] {
    const before = JSON.stringify(this.snapshot);
    const frozen = deepFreeze(structuredClone(this.snapshot));
    const a = transition(this.machine, frozen, event);
    const b = transition(this.machine, JSON.parse(before) as Snapshot, event);
    expect(JSON.stringify(frozen)).toBe(before); // the input is untouched
    expect(a).toEqual(b); // deterministic, and a JSON round trip continues identically
    this.snapshot = a.snapshot;
    this.effects.push(...a.effects);
    return a.effects;
  }
  startRun(tasks?: TaskItem[]): Effect[] {
    const fx = this.send({ type: "start", at: this.at });
    if (fx.some((e) => e.type === "tasks.load")) return this.send({ type: "tasks.loaded", at: this.at, tasks: tasks ?? [] });
    return fx;
  }
  /** The phase the machine waits on, or undefined. */
  get running(): { phase: string; attempt: number } | undefined {
    const a = this.snapshot.awaiting;
    return a?.kind === "phase" ? { phase: a.phase, attempt: a.attempt } : undefined;
  }
  /** Finish the running phase; fire retries at once. */
  finish(over: Partial<PhaseResult> = {}, advanceMs = 10): Effect[] {
    const r = this.running;
    if (!r) throw new Error(`no phase running (status ${this.snapshot.status}, awaiting ${JSON.stringify(this.snapshot.awaiting)})`);
    this.at += advanceMs;
    const fx = this.send({ type: "phase.finished", at: this.at, phase: r.phase, attempt: r.attempt, result: result(over) });
    if (this.snapshot.awaiting?.kind === "retry") return [...fx, ...this.send({ type: "retry.fired", at: this.at })];
    return fx;
  }
  get outcome() {
    return this.snapshot.outcome;
  }
}

export function task(id: string, over: Partial<TaskItem> = {}): TaskItem {
  return { id, title: id, body: "", priority: null, depends_on: [], done: false, blocked: false, attempts: 0, notes: [], ...over };
}
