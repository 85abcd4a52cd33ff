/** summary.md, written when a run ends or is interrupted. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Snapshot } from "../machine/types.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { formatSummary } from "./format-summary.ts";
import { listArtifacts } from "./run-artifacts.ts";
import type { RunEvent } from "./run-events.ts";
import type { RunInfo } from "./run-info.ts";

function readJsonl<T>(path: string): T[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as T];
      } catch {
        return [];
      }
    });
}

export function writeSummary(store: RunStore, info: RunInfo, snapshot: Snapshot, pending: readonly RunEvent[] = []): void {
  try {
    const iterations = readJsonl<Parameters<typeof formatSummary>[2][number]>(join(store.dir, "iterations.jsonl"));
    let events: RunEvent[] = [];
    try {
      events = readJsonl<RunEvent>(join(store.dir, "events.jsonl"));
    } catch {
      // the path diagram is left out
    }
    const last = events.at(-1)?.seq ?? 0;
    for (const e of pending) if (e.seq > last) events.push(e);
    store.writeSummary(formatSummary(info, snapshot, iterations, events, listArtifacts(info.workdir, info.run_id)));
  } catch {
    // the summary is a convenience; the logs hold the truth
  }
}
