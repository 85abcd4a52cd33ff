/**
 * What survives a crash besides the event log: state.json (the machine
 * snapshot and the log's bookkeeping) and the iteration's change baseline.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Snapshot } from "../machine/types.ts";
import type { Baseline } from "../runtime/measure-changes.ts";
import { writeFileAtomic, type RunStore } from "../runtime/run-store.ts";
import type { RunEvent } from "./run-events.ts";

/** What state.json holds: the machine snapshot and the bookkeeping of the log. */
export interface Checkpoint {
  snapshot: Snapshot;
  /** seq of the last event this checkpoint accounts for. */
  seq: number;
  /** Events of the last transition, re-appended on resume if a crash lost them (by seq: never twice). */
  pending: RunEvent[];
  /** iterations.jsonl records of the last transition, re-appended on resume if a crash lost them (by iteration: never twice). */
  pending_iterations?: IterationRecord[];
  updated_at: string;
}

/** A line of iterations.jsonl: the iteration's history entry, with the run's totals when it ended. */
export interface IterationRecord {
  iteration: number;
  [key: string]: unknown;
}

/** Keep the iteration's baseline on disk, so a resumed iteration measures from its real start. */
export function saveIterationBaseline(store: RunStore, iteration: number, baseline: Baseline): void {
  writeFileAtomic(join(store.dir, "baseline.json"), JSON.stringify({ iteration, baseline }));
}

/** The baseline saved for `iteration`, if that is the one on disk. */
export function loadIterationBaseline(store: RunStore, iteration: number): Baseline | undefined {
  try {
    const saved = JSON.parse(readFileSync(join(store.dir, "baseline.json"), "utf8")) as { iteration: number; baseline: Baseline };
    return saved?.iteration === iteration ? saved.baseline : undefined;
  } catch {
    return undefined;
  }
}
