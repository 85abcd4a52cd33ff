/** summary.md, written when a run ends or is interrupted. */
import { join } from "node:path";
import type { Host, HostFiles } from "../host/host.ts";
import type { Snapshot } from "../machine/types.ts";
import type { RunStore } from "../runtime/run-store.ts";
import { ignoredChangedSince } from "../changes/measure-changes.ts";
import { formatSummary, type IterationRecord } from "./format-summary.ts";
import { listArtifacts } from "./run-artifacts.ts";
import type { RunEvent } from "./run-events.ts";
import type { RunInfo } from "./run-info.ts";

/** A long run's table shows its first and last iterations; iterations.jsonl has every one. */
const SHOWN_FIRST = 50;
const SHOWN_LAST = 50;

/** The events the summary reads: the rest of a long log is not parsed at all. */
const READ = new Set(["phase.finished", "phase.retry", "policy.violation", "sandbox.refused", "phase.skipped", "iteration.started", "iteration.finished"]);

function lines(files: HostFiles, path: string): string[] {
  return files.readText(path).split("\n").filter(Boolean);
}

function parse<T>(line: string): T | undefined {
  try {
    return JSON.parse(line) as T;
  } catch {
    // a torn line
    return undefined;
  }
}

/**
 * An event line's type, read without parsing it: phaseloop writes `type`
 * before any nested object. Undefined when not found (the line is parsed).
 */
function typeOf(line: string): string | undefined {
  const at = line.indexOf('"type":"');
  if (at < 0) return undefined;
  const end = line.indexOf('"', at + 8);
  return end < 0 ? undefined : line.slice(at + 8, end);
}

/** The iteration an `iteration.*` line names, read as its type is; undefined when not found. */
function iterationOf(line: string): number | undefined {
  const at = line.indexOf('"iteration":');
  if (at < 0) return undefined;
  const n = Number.parseInt(line.slice(at + 12, at + 24), 10);
  return Number.isNaN(n) ? undefined : n;
}

/** `shown`: the iterations whose times the table shows (all, when undefined). */
function readEvents(files: HostFiles, path: string, shown: Set<number> | undefined): { events: RunEvent[]; lastSeq: number } {
  const all = lines(files, path);
  const events: RunEvent[] = [];
  for (const line of all) {
    const type = typeOf(line);
    if (type !== undefined && !READ.has(type)) continue;
    if (shown && (type === "iteration.started" || type === "iteration.finished")) {
      const n = iterationOf(line);
      if (n !== undefined && !shown.has(n)) continue;
    }
    const e = parse<RunEvent>(line);
    if (e) events.push(e);
  }
  let lastSeq = 0;
  for (let i = all.length - 1; i >= 0 && lastSeq === 0; i--) lastSeq = parse<{ seq?: number }>(all[i]!)?.seq ?? 0;
  return { events, lastSeq };
}

function readIterations(files: HostFiles, path: string): { iterations: IterationRecord[]; hidden?: { after: number; count: number } } {
  const all = lines(files, path);
  const keep = (some: string[]) => some.flatMap((l) => parse<IterationRecord>(l) ?? []);
  if (all.length <= SHOWN_FIRST + SHOWN_LAST) return { iterations: keep(all) };
  const first = keep(all.slice(0, SHOWN_FIRST));
  return { iterations: [...first, ...keep(all.slice(-SHOWN_LAST))], hidden: { after: first.length, count: all.length - SHOWN_FIRST - SHOWN_LAST } };
}

export function writeSummary(store: RunStore, info: RunInfo, snapshot: Snapshot, host: Host, pending: readonly RunEvent[] = []): void {
  try {
    const { iterations, hidden } = readIterations(store.files, join(store.dir, "iterations.jsonl"));
    let events: RunEvent[] = [];
    let lastSeq = 0;
    try {
      ({ events, lastSeq } = readEvents(store.files, join(store.dir, "events.jsonl"), hidden && new Set(iterations.map((it) => it.iteration))));
    } catch {
      // the path diagram is left out
    }
    for (const e of pending) if (e.seq > lastSeq) events.push(e);
    // a run that stopped for want of progress: the files it changed that git ignores say why, often
    const ignored = info.measure === "git" && snapshot.outcome?.reason.code === "no_progress" ? ignoredChangedSince(host, info.workdir, Date.parse(info.started_at)) : [];
    store.writeSummary(formatSummary(info, snapshot, iterations, events, listArtifacts(store.files, info.workdir, info.run_id), hidden, ignored));
  } catch {
    // the summary is a convenience; the logs hold the truth
  }
}
