/**
 * What survives a crash besides the event log: state.json (the machine
 * snapshot and the log's bookkeeping) and the iteration's change baseline.
 */
import { join } from "node:path";
import type { Snapshot } from "../machine/types.ts";
import type { Baseline } from "../changes/measure-changes.ts";
import { readCheckpointFile } from "../runtime/checkpoint-file.ts";
import type { RunStore } from "../runtime/run-store.ts";
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

/** The JSON of each history entry, made once: an entry never changes once recorded, and is shared by every later snapshot. */
const entryJson = new WeakMap<object, string>();
/** Stands for the history while the rest is made; random, so that no value of the run can be mistaken for it. */
const HOLE = `history-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;

/**
 * state.json's text: `JSON.stringify(cp)`, made at every transition. The
 * history (up to twenty iterations, most of the text) is joined from the
 * entries' JSON made when each was recorded.
 */
export function checkpointJson(cp: Checkpoint): string {
  const history = cp.snapshot.history;
  if (history.length === 0) return JSON.stringify(cp);
  // the key keeps its place in the copy: the text is the same as JSON.stringify's
  const text = JSON.stringify({ ...cp, snapshot: { ...cp.snapshot, history: HOLE } });
  const hole = `"history":"${HOLE}"`;
  const at = text.indexOf(hole);
  if (at < 0) return JSON.stringify(cp);
  let entries = "";
  for (let i = 0; i < history.length; i++) {
    const entry = history[i]!;
    let json = entryJson.get(entry);
    if (json === undefined) entryJson.set(entry, (json = JSON.stringify(entry)));
    entries += i === 0 ? json : `,${json}`;
  }
  return `${text.slice(0, at)}"history":[${entries}]${text.slice(at + hole.length)}`;
}

/** A line of iterations.jsonl: the iteration's history entry, with the run's totals when it ended. */
export interface IterationRecord {
  iteration: number;
  [key: string]: unknown;
}

/**
 * Keep the iteration's baseline on disk, so a resumed iteration measures from
 * its real start. Replaced at every iteration the way state.json is (see
 * CheckpointFile): a crash leaves baseline.json or its complete
 * `baseline.json.next`.
 */
export function saveIterationBaseline(store: RunStore, iteration: number, baseline: Baseline): void {
  store.baseline.write(JSON.stringify({ iteration, baseline }));
}

/** The baseline saved for `iteration`, if that is the one on disk. */
export function loadIterationBaseline(store: RunStore, iteration: number): Baseline | undefined {
  try {
    const saved = JSON.parse(readCheckpointFile(join(store.dir, "baseline.json"), store.files) ?? "") as { iteration: number; baseline: Baseline };
    return saved?.iteration === iteration ? saved.baseline : undefined;
  } catch {
    return undefined;
  }
}
