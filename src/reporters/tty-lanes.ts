/**
 * The terminal view of a run with parallel lanes: one line per lane, side by
 * side in one live list (task, iteration, phase, timer), the agent's last line
 * beneath it; a lane ends ✔ merged, ✖ blocked (with why and its branch), or ↓
 * interrupted. Lanes appear as they start: like an iteration's steps (see
 * tty-list.ts), each lane is drawn by a slot that waits for it, and whose
 * next slot runs beside it.
 */
import type { RunEvent } from "../run/run-events.ts";
import { formatDuration, formatList, formatUsage, plural, type Paint } from "../run/format-event-line.ts";
import { formatFailure } from "../run/format-reason.ts";
import type { ReporterIo } from "./reporter-io.ts";
import { cleanLine, deferred, type Deferred } from "./tty-iteration.ts";
import { runList, type Wrapper } from "./tty-list.ts";

interface LaneRow {
  task: string;
  iteration: number;
  phase: string | null;
  phaseStartedAt: number;
  startedAt: number;
  tokens: number;
  costUsd: number;
  output: string | null;
  end: { kind: "ok" | "failed" | "skipped"; title: string } | null;
  wrapper: Wrapper | null;
  settle: Deferred | null;
}

export interface LanesView {
  /** Show a lane's event; false when the event is not a lane's. */
  onEvent(event: RunEvent): boolean;
  /** The lanes are over (the run goes on, or ends): the list is finished and drawn for good. */
  close(): void;
  /** The list's drawing, done once it is finished. */
  readonly drawn: Promise<void>;
}

/** How often at most the lanes are redrawn for what happened in them. */
const FRAME_MS = 50;

export function createLanesView(io: ReporterIo, paint: Paint, now: () => number, tickMs: number): LanesView {
  const rows: LaneRow[] = [];
  const byTask = new Map<string, LaneRow>();
  let closed = false;
  let wake = deferred();

  const title = (r: LaneRow): string => {
    const head = `${paint.bold(r.task)} · iteration ${r.iteration}`;
    if (r.phase !== null) return `${head} · ${paint.cyan(r.phase)} · ${formatDuration(now() - r.phaseStartedAt)}${formatUsage(r.tokens, r.costUsd)}`;
    return `${head} · ${formatDuration(now() - r.startedAt)}${formatUsage(r.tokens, r.costUsd)}`;
  };

  const end = (r: LaneRow, kind: "ok" | "failed" | "skipped", text: string): void => {
    if (r.end !== null) return;
    r.end = { kind, title: `${paint.bold(r.task)} · ${text}` };
    r.settle?.resolve();
  };

  // every change to a drawn line redraws the whole list: lanes that move fast are redrawn
  // at most every FRAME_MS, with what they show by then
  const changed = new Set<LaneRow>();
  let frame: ReturnType<typeof setTimeout> | null = null;
  const drawFrame = (): void => {
    if (frame !== null) clearTimeout(frame);
    frame = null;
    for (const r of changed) {
      if (r.end !== null || r.wrapper === null) continue;
      r.wrapper.title = title(r);
      if (r.output !== null) r.wrapper.output = r.output;
    }
    changed.clear();
  };
  const redraw = (r: LaneRow): void => {
    changed.add(r);
    frame ??= setTimeout(drawFrame, FRAME_MS);
  };

  const setOutput = (r: LaneRow, text: string): void => {
    r.output = text;
  };

  async function runRow(r: LaneRow, task: Wrapper): Promise<void> {
    if (r.end === null) {
      r.settle = deferred();
      r.wrapper = task;
      if (r.output !== null) task.output = r.output;
      await r.settle.promise;
      r.wrapper = null;
    }
    const e = r.end ?? { kind: "skipped" as const, title: `${paint.bold(r.task)} · ended` };
    if (e.kind === "failed") throw new Error(e.title);
    if (e.kind === "skipped") return task.skip(e.title);
    task.title = e.title;
  }

  async function slot(index: number, task: Wrapper): Promise<unknown> {
    while (rows[index] === undefined && !closed) await wake.promise;
    const r = rows[index];
    if (r === undefined) return;
    return task.newListr([{ title: title(r), task: (_c: unknown, t: Wrapper) => runRow(r, t) }, { task: (_c: unknown, next: Wrapper) => slot(index + 1, next) }], { concurrent: true, exitOnError: false });
  }

  const ticker = tickMs > 0 ? setInterval(() => {
    for (const r of rows) if (r.end === null && r.wrapper !== null) r.wrapper.title = title(r);
  }, tickMs) : null;
  (ticker as { unref?: () => void } | null)?.unref?.();

  const drawn = runList(io, paint, [{ task: (_c: unknown, t: Wrapper) => slot(0, t) }], false).finally(() => {
    if (ticker !== null) clearInterval(ticker);
  });

  const notify = (): void => {
    const w = wake;
    wake = deferred();
    w.resolve();
  };

  return {
    drawn,
    onEvent(event: RunEvent): boolean {
      const task = event.task;
      if (typeof task !== "string") return false;
      if (event.type === "lane.started") {
        const r: LaneRow = { task, iteration: 0, phase: null, phaseStartedAt: now(), startedAt: now(), tokens: 0, costUsd: 0, output: null, end: null, wrapper: null, settle: null };
        rows.push(r);
        byTask.set(task, r);
        notify();
        return true;
      }
      const r = byTask.get(task);
      // a resumed run's lanes: each appears with its first event
      if (r === undefined) {
        if (event.type.startsWith("lane.") || event.type === "task.updated") return false;
        onEventNew(task);
        return this.onEvent(event);
      }
      switch (event.type) {
        case "iteration.started":
          r.iteration = event.iteration;
          break;
        case "phase.started":
          r.phase = event.phase;
          r.phaseStartedAt = now();
          break;
        case "phase.output": {
          const text = cleanLine(event.line).trim();
          if (text !== "") setOutput(r, text);
          break;
        }
        case "phase.finished":
          r.phase = null;
          r.tokens += event.tokens;
          r.costUsd += event.cost_usd;
          if (event.status === "failed") setOutput(r, `${event.phase} failed: ${formatFailure(event)}`);
          break;
        case "lane.finished":
          if (event.outcome === "complete") setOutput(r, "done: merging");
          break;
        case "lane.conflict":
          setOutput(r, `conflicts in ${formatList(event.files)}: ${event.action === "rebased" ? "rebased, verifying again" : "blocked"}`);
          break;
        case "lane.merged":
          end(r, "ok", `${paint.green("merged")} into ${event.into} · ${plural(r.iteration, "iteration")} · ${formatDuration(now() - r.startedAt)}${formatUsage(r.tokens, r.costUsd)}`);
          break;
        case "lane.blocked":
          end(r, "failed", `${event.status === "blocked" ? paint.red("blocked") : paint.yellow("stopped")}: ${event.reason} · branch ${event.branch}`);
          break;
        case "lane.interrupted":
          end(r, "skipped", `interrupted at iteration ${event.iteration}${event.phase === null ? "" : `, phase ${event.phase}`}`);
          break;
        default:
          break;
      }
      if (r.end === null) redraw(r);
      return true;
    },
    close(): void {
      if (closed) return;
      closed = true;
      drawFrame();
      for (const r of rows) end(r, "skipped", "ended");
      notify();
    },
  };

  function onEventNew(task: string): void {
    const r: LaneRow = { task, iteration: 0, phase: null, phaseStartedAt: now(), startedAt: now(), tokens: 0, costUsd: 0, output: null, end: null, wrapper: null, settle: null };
    rows.push(r);
    byTask.set(task, r);
    notify();
  }
}
