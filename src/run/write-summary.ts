/** summary.md, written when a run ends or is interrupted. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Snapshot } from "../machine/types.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { formatSummary } from "./format-summary.ts";
import type { RunInfo } from "./run-info.ts";

export function writeSummary(store: RunStore, info: RunInfo, snapshot: Snapshot): void {
  try {
    const iterations = readFileSync(join(store.dir, "iterations.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean)
      .flatMap((l) => {
        try {
          return [JSON.parse(l)];
        } catch {
          return [];
        }
      });
    store.writeSummary(formatSummary(info, snapshot, iterations));
  } catch {
    // the summary is a convenience; the logs hold the truth
  }
}
