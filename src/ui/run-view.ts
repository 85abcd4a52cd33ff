/**
 * A run as its page shows it, folded from its events one at a time: the
 * summary `status` prints (run-summary.ts), every phase run in a compact row,
 * the iterations as rows of the timeline, how often each transition was
 * taken, tokens and cost over time, and what the sandbox refused and the
 * policy flagged, by phase run. The server folds a run's log into it once;
 * the page folds each new event in as it arrives, with this same code. Pure:
 * no node:*, no clock (times come from the events).
 */
import { addToRunSummary, emptyRunSummary, type RunSummary } from "../records/run-summary.ts";
import type { RunEvent } from "../run/run-events.ts";

/** One phase run (an attempt), as a timeline bar. Times are ms since the run's first event. */
export interface PhaseRun {
  /** Index in `runs`. */
  n: number;
  iteration: number;
  phase: string;
  attempt: number;
  kind: string;
  /** `NNNN-PHASE`: its files under phases/ ("" for a group). */
  dir: string;
  /** The lane's task, in a run with parallel lanes. */
  task: string | null;
  /** The parallel group it is a member of. */
  group: string | null;
  start: number;
  /** Until it finished; null while it runs. */
  ms: number | null;
  /** `waiting`: an ask phase's question without an answer yet. */
  status: "running" | "waiting" | "succeeded" | "failed" | "skipped" | "interrupted";
  error: string | null;
  message: string | null;
  exit_code: number | null;
  tokens: number;
  cost_usd: number;
  model: string | null;
  /** Extracted values (absent when none). */
  output?: Record<string, unknown>;
  changes?: string[];
  refused?: string[];
  violations?: string[];
  /** A sub-pipeline's folder, relative to the run's. */
  sub?: string;
}

/** A row of the timeline: one iteration of the run, or of one lane. */
export interface IterationRow {
  iteration: number;
  task: string | null;
  start: number;
  /** Until the last of its phases ended (or now, while one runs). */
  end: number;
  /** Indexes into `runs`. */
  runs: number[];
  failed: boolean;
}

/** One point of the usage curve: after a phase run finished. */
export interface UsagePoint {
  t: number;
  tokens: number;
  cost_usd: number;
}

export interface RunView {
  /** Where the run's folder is, relative to the workdir's runs (`ID`, `ID/sub/0003-x`, `ID/lanes/T`). */
  key: string;
  summary: RunSummary;
  /** Phase names in file order, from run.started. */
  phases: string[];
  /** Time of the first event (ms since the epoch); times in the view are relative to it. */
  t0: number | null;
  runs: PhaseRun[];
  rows: IterationRow[];
  /** `FROM>TO` → times taken; TO may be an outcome (complete, failed, …). */
  edges: Record<string, number>;
  /** Phase → times it ran (attempts counted once per phase run). */
  visits: Record<string, number>;
  usage: UsagePoint[];
  /** Lanes seen, in order. */
  lanes: string[];
  /** The last phase each lane passed through ("" for the run itself): where its path goes on from. */
  last: Record<string, string>;
  /** Each lane's parallel group in flight and its members. */
  groups: Record<string, { group: string; members: string[] }>;
  /** Warnings and notes (the last 200). */
  notes: { at: number; level: string; message: string }[];
  /** Latest end time seen: the page shows durations up to it. */
  now: number;
}

/** Usage points kept: past this the curve is thinned to half. */
const USAGE_MAX = 2000;
const NOTES_MAX = 200;

export function emptyRunView(key: string): RunView {
  return { key, summary: emptyRunSummary(), phases: [], t0: null, runs: [], rows: [], edges: {}, visits: {}, usage: [], lanes: [], last: {}, groups: {}, notes: [], now: 0 };
}

/** The fold's working state that the view does not show: kept beside it, out of the JSON sent to the page. */
interface Cursor {
  /** Open phase runs by lane and phase. */
  open: Map<string, number>;
  /** Open rows by lane. */
  row: Map<string, IterationRow>;
}

const cursors = new WeakMap<RunView, Cursor>();

function cursorOf(view: RunView): Cursor {
  let c = cursors.get(view);
  if (c === undefined) {
    c = rebuildCursor(view);
    cursors.set(view, c);
  }
  return c;
}

/** A view that came over the wire has no cursor: rebuild it from the rows and runs. */
function rebuildCursor(view: RunView): Cursor {
  const c: Cursor = { open: new Map(), row: new Map() };
  for (const r of view.rows) c.row.set(laneKey(r.task), r);
  for (const r of view.runs) {
    const lane = laneKey(r.task);
    if (r.status === "running" || r.status === "waiting") c.open.set(`${lane}\u0000${r.phase}`, r.n);
  }
  return c;
}

const laneKey = (task: string | null | undefined): string => task ?? "";

function timeOf(view: RunView, at: string): number {
  const ms = Date.parse(at);
  if (!Number.isFinite(ms)) return view.now;
  if (view.t0 === null) view.t0 = ms;
  const t = ms - view.t0;
  if (t > view.now) view.now = t;
  return t;
}

function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

/** Adds one event to the view (mutates it). */
export function addToRunView(view: RunView, event: RunEvent): RunView {
  if (event.type === "phase.output") return view;
  addToRunSummary(view.summary, event);
  const c = cursorOf(view);
  const last = view.last;
  const t = timeOf(view, event.at);
  const lane = laneKey(event.task);
  if (event.task && !view.lanes.includes(event.task)) view.lanes.push(event.task);
  switch (event.type) {
    case "run.started":
      view.phases = [...event.phases];
      break;
    case "iteration.started": {
      const row: IterationRow = { iteration: event.iteration, task: event.task ?? null, start: t, end: t, runs: [], failed: false };
      view.rows.push(row);
      c.row.set(lane, row);
      break;
    }
    case "phase.started": {
      const group = groupOf(view, lane, event.phase);
      if (group === null) {
        const from = last[lane];
        if (from !== undefined && event.attempt === 1) bump(view.edges, `${from}>${event.phase}`);
        last[lane] = event.phase;
      }
      if (event.attempt === 1) bump(view.visits, event.phase);
      const run: PhaseRun = {
        n: view.runs.length,
        iteration: event.iteration,
        phase: event.phase,
        attempt: event.attempt,
        kind: event.kind,
        dir: event.dir,
        task: event.task ?? null,
        group,
        start: t,
        ms: null,
        status: "running",
        error: null,
        message: null,
        exit_code: null,
        tokens: 0,
        cost_usd: 0,
        model: event.model ?? null,
      };
      if (event.sub !== undefined) run.sub = event.sub;
      view.runs.push(run);
      c.open.set(`${lane}\u0000${event.phase}`, run.n);
      if (event.kind === "group") view.groups[lane] = { group: event.phase, members: [...(event.members ?? [])] };
      let row = c.row.get(lane);
      if (row === undefined || row.iteration !== event.iteration) {
        // a resumed run goes on in an iteration whose start is in an earlier part of the log
        row = { iteration: event.iteration, task: event.task ?? null, start: t, end: t, runs: [], failed: false };
        view.rows.push(row);
        c.row.set(lane, row);
      }
      row.runs.push(run.n);
      break;
    }
    case "phase.skipped": {
      // a skipped phase is on the path too: control passed through it (the graph's dashed edge)
      const skippedIn = groupOf(view, lane, event.phase);
      if (skippedIn === null) {
        const from = last[lane];
        if (from !== undefined) bump(view.edges, `${from}>${event.phase}`);
        last[lane] = event.phase;
      }
      const run: PhaseRun = { n: view.runs.length, iteration: event.iteration, phase: event.phase, attempt: 0, kind: "skip", dir: "", task: event.task ?? null, group: skippedIn, start: t, ms: 0, status: "skipped", error: null, message: event.reason, exit_code: null, tokens: 0, cost_usd: 0, model: null };
      view.runs.push(run);
      c.row.get(lane)?.runs.push(run.n);
      break;
    }
    case "phase.finished": {
      const key = `${lane}\u0000${event.phase}`;
      const n = c.open.get(key);
      const run = n === undefined ? undefined : view.runs[n];
      if (run === undefined) break;
      c.open.delete(key);
      run.ms = event.duration_ms;
      run.status = event.status === "succeeded" ? "succeeded" : "failed";
      run.error = event.error;
      run.message = event.message;
      run.exit_code = event.exit_code;
      run.tokens = event.tokens;
      run.cost_usd = event.cost_usd;
      if (Object.keys(event.output).length > 0) run.output = event.output;
      if (event.changes.length > 0) run.changes = event.changes;
      if (run.kind === "group" && view.groups[lane]?.group === run.phase) delete view.groups[lane];
      const row = c.row.get(lane);
      if (row !== undefined) {
        row.end = Math.max(row.end, t);
        if (run.status === "failed") row.failed = true;
      }
      if (event.tokens > 0 || event.cost_usd > 0 || view.usage.length === 0) pushUsage(view, { t, tokens: view.summary.tokens, cost_usd: view.summary.cost_usd });
      break;
    }
    case "sandbox.refused":
    case "policy.violation": {
      const n = c.open.get(`${lane}\u0000${event.phase}`) ?? lastRunOf(view, event.phase, event.task ?? null);
      const run = n === undefined ? undefined : view.runs[n];
      if (run === undefined) break;
      if (event.type === "sandbox.refused") run.refused = [...(run.refused ?? []), ...event.refused].slice(0, 200);
      else run.violations = [...(run.violations ?? []), ...event.paths.map((p) => `${event.action}: ${p}`)].slice(0, 200);
      break;
    }
    case "question.asked": {
      // an ask phase has no phase.started: its question is where control reached it
      const from = last[lane];
      if (from !== event.phase) {
        if (from !== undefined) bump(view.edges, `${from}>${event.phase}`);
        bump(view.visits, event.phase);
        last[lane] = event.phase;
      }
      const key = `${lane}\u0000${event.phase}`;
      if (c.open.has(key)) break; // asked again after a resume: the same wait
      const run: PhaseRun = { n: view.runs.length, iteration: event.iteration, phase: event.phase, attempt: 1, kind: "ask", dir: "", task: event.task ?? null, group: null, start: t, ms: null, status: "waiting", error: null, message: event.question, exit_code: null, tokens: 0, cost_usd: 0, model: null };
      view.runs.push(run);
      c.open.set(key, run.n);
      c.row.get(lane)?.runs.push(run.n);
      break;
    }
    case "question.answered": {
      const key = `${lane}\u0000${event.phase}`;
      const n = c.open.get(key);
      const run = n === undefined ? undefined : view.runs[n];
      if (run === undefined) break;
      c.open.delete(key);
      run.status = "succeeded";
      run.ms = t - run.start;
      run.output = { answer: event.answer };
      break;
    }
    case "iteration.finished": {
      const row = c.row.get(lane);
      if (row !== undefined && row.iteration === event.iteration) row.end = Math.max(row.end, t);
      break;
    }
    case "note":
      view.notes.push({ at: t, level: event.level, message: event.message });
      if (view.notes.length > NOTES_MAX) view.notes.splice(0, view.notes.length - NOTES_MAX);
      break;
    case "run.interrupted":
    case "lane.interrupted":
      for (const [k, n] of c.open) {
        const run = view.runs[n];
        if (run !== undefined && run.status !== "waiting" && (event.type === "run.interrupted" || k.startsWith(`${lane}\u0000`))) {
          run.status = "interrupted";
          run.ms = t - run.start;
          c.open.delete(k);
        }
      }
      break;
    case "run.resumed":
      // the phase in flight runs again; the interrupted attempt stays as it was
      for (const [k, n] of c.open) {
        const run = view.runs[n];
        if (run?.status === "waiting") continue; // the question is answered (or asked again) next
        if (run !== undefined) {
          run.status = "interrupted";
          run.ms = t - run.start;
        }
        c.open.delete(k);
      }
      view.groups = {};
      break;
    case "run.finished": {
      const from = last[""];
      if (from !== undefined) bump(view.edges, `${from}>${event.outcome}`);
      pushUsage(view, { t, tokens: event.tokens, cost_usd: event.cost_usd });
      break;
    }
    default:
      break;
  }
  return view;
}

/** The parallel group a phase runs in now, if it is a member of the lane's group in flight. */
function groupOf(view: RunView, lane: string, phase: string): string | null {
  const g = view.groups[lane];
  return g !== undefined && g.members.includes(phase) ? g.group : null;
}

function lastRunOf(view: RunView, phase: string, task: string | null): number | undefined {
  for (let i = view.runs.length - 1; i >= 0 && i >= view.runs.length - 64; i--) {
    const r = view.runs[i]!;
    if (r.phase === phase && r.task === task) return i;
  }
  return undefined;
}

function pushUsage(view: RunView, point: UsagePoint): void {
  view.usage.push(point);
  if (view.usage.length > USAGE_MAX) view.usage = view.usage.filter((_p, i) => i % 2 === 1 || i === view.usage.length - 1);
}

/** The run's view, from its events in order. */
export function foldRunView(key: string, events: Iterable<RunEvent>): RunView {
  const view = emptyRunView(key);
  for (const e of events) addToRunView(view, e);
  return view;
}
