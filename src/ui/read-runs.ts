/**
 * What the page shows, read from the run folders through the readers `runs`,
 * `status` and `logs` use: `listRuns` for the runs list (with each run's lanes
 * and sub-pipeline runs below it), `readEvents` folded into a run's view, and
 * the files of one phase run. Reading never changes a file; a file an agent
 * replaced with a link is not followed.
 */
import { dirname, join } from "node:path";
import type { Host, HostFiles } from "../host/host.ts";
import { lastEvents, listRuns, type RunListEntry } from "../records/list-runs.ts";
import { EventLineSplitter, isRunLive, readEvents, runsDir, type RunReadHost } from "../records/run-log.ts";
import { addToRunSummary, emptyRunSummary, runStateOf } from "../records/run-summary.ts";
import { readCheckpointFile } from "../runtime/checkpoint-file.ts";
import { machineName } from "../runtime/run-lock.ts";
import { isPhaseDirName, parseRunKey, rootRunOf } from "./run-key.ts";
import { addToRunView, emptyRunView, type RunView } from "./run-view.ts";

export interface RunRow {
  key: string;
  /** 0 for a run, 1 for its lanes and sub-pipeline runs, … */
  depth: number;
  kind: "run" | "lane" | "sub";
  pipeline: string | null;
  /** complete, failed, blocked, stopped, running, awaiting answer, interrupted, crashed. */
  state: string;
  reason: string | null;
  iteration: number | null;
  max_iterations: number | null;
  phase: string | null;
  question: string | null;
  started_at: string | null;
  duration_ms: number | null;
  tokens: number;
  cost_usd: number;
}

/** The folder of a run key, or undefined for a key that is not one. */
export function runFolder(workdir: string, key: string): string | undefined {
  const parts = parseRunKey(key);
  return parts === undefined ? undefined : join(runsDir(workdir), ...parts);
}

/** Every run of the workdir, newest first, each followed by its lanes and sub-pipeline runs. */
export async function listRunRows(workdir: string, host: RunReadHost, now = host.clock.now()): Promise<RunRow[]> {
  const { files } = host;
  const entries = await listRuns(workdir, host, now);
  const rows = await Promise.all(entries.map(async (entry) => [await rowOf(entry, files), ...(await childRows(join(runsDir(workdir), entry.run), entry.run, 1, entry.outcome === "running", files))]));
  return rows.flat();
}

async function rowOf(entry: RunListEntry, files: HostFiles): Promise<RunRow> {
  const row: RunRow = {
    key: entry.run,
    depth: 0,
    kind: "run",
    pipeline: entry.pipeline,
    state: entry.outcome,
    reason: entry.reason,
    iteration: entry.iterations,
    max_iterations: null,
    phase: null,
    question: null,
    started_at: entry.started_at,
    duration_ms: entry.duration_ms,
    tokens: entry.tokens,
    cost_usd: entry.cost_usd,
  };
  if (entry.outcome === "complete" || entry.outcome === "failed" || entry.outcome === "blocked" || entry.outcome === "stopped") return row;
  // a run that has not finished: where it stands, from the end of its log and (running) its checkpoint
  const tailed = await withTail(row, join(entry.dir, "events.jsonl"), entry.outcome === "running", files);
  if (entry.outcome === "running") {
    const inflight = readInflightIn(entry.dir, files);
    if (inflight !== null) {
      if (inflight.phases.length > 0) tailed.phase = inflight.phases.map((p) => p.phase).join(", ");
      else if (inflight.waiting !== null) tailed.phase = inflight.waiting;
      if (inflight.iteration > 0) tailed.iteration = inflight.iteration;
    }
  }
  return tailed;
}

async function withTail(row: RunRow, eventsPath: string, live: boolean, files: HostFiles): Promise<RunRow> {
  const summary = emptyRunSummary();
  for (const e of await lastEvents(eventsPath, files)) addToRunSummary(summary, e);
  row.phase = summary.phase;
  if (summary.iteration > 0) row.iteration = summary.iteration;
  row.max_iterations = summary.max_iterations;
  if (summary.question !== null) {
    row.question = summary.question.question;
    if (!live) row.state = "awaiting answer";
  }
  return row;
}

async function childRows(dir: string, key: string, depth: number, parentLive: boolean, files: HostFiles): Promise<RunRow[]> {
  const out: RunRow[] = [];
  for (const kind of ["lanes", "sub"] as const) {
    let names: string[];
    try {
      names = files.readdir(join(dir, kind)).filter((name) => parseRunKey(name) !== undefined && files.lstat(join(dir, kind, name))?.isDirectory()).sort();
    } catch {
      continue;
    }
    for (const name of names) {
      const childDir = join(dir, kind, name);
      const childKey = `${key}/${kind}/${name}`;
      out.push(await childRow(childDir, childKey, kind === "lanes" ? "lane" : "sub", depth, parentLive, files));
      if (depth < 4) out.push(...(await childRows(childDir, childKey, depth + 1, parentLive, files)));
    }
  }
  return out;
}

async function childRow(dir: string, key: string, kind: "lane" | "sub", depth: number, parentLive: boolean, files: HostFiles): Promise<RunRow> {
  const summary = emptyRunSummary();
  for (const e of await lastEvents(join(dir, "events.jsonl"), files)) addToRunSummary(summary, e);
  let pipeline = summary.pipeline;
  let startedAt = summary.started_at;
  if (pipeline === null || startedAt === null) {
    try {
      const info = JSON.parse(files.readText(join(dir, "run.json"))) as { pipeline?: unknown; started_at?: unknown };
      if (typeof info.pipeline === "string") pipeline ??= info.pipeline;
      if (typeof info.started_at === "string") startedAt ??= info.started_at;
    } catch {
      // a lane's folder has no run.json
    }
  }
  const f = summary.finished;
  return {
    key,
    depth,
    kind,
    pipeline,
    state: runStateOf(summary, parentLive && f === null),
    reason: f ? f.reason.message || f.reason.code : null,
    iteration: f ? f.iterations : summary.iteration || null,
    max_iterations: summary.max_iterations,
    phase: f ? null : summary.phase,
    question: summary.question?.question ?? null,
    started_at: startedAt,
    duration_ms: f ? f.elapsed_ms : null,
    tokens: summary.tokens,
    cost_usd: summary.cost_usd,
  };
}

export interface RunRead {
  view: RunView;
  /** Bytes of events.jsonl folded in: where following carries on. */
  offset: number;
  live: boolean;
  /** The pipeline file the run was started with (run.json or run.started). */
  file: string | null;
  problem?: string;
}

/**
 * Views folded lately, by workdir and key, with the bytes of the log they hold: opening a
 * run's page again (or a page reconnecting) folds in only what the log gained since.
 */
const folded = new Map<string, { view: RunView; offset: number; ino: number; pending: Promise<unknown> }>();
const FOLDED_MAX = 4;

/** A run's view, from its event log (streamed, a chunk at a time; from where it was left when folded lately). */
export async function readRunView(workdir: string, key: string, host: Pick<Host, "files" | "processes">): Promise<RunRead | undefined> {
  const { files } = host;
  const dir = runFolder(workdir, key);
  if (dir === undefined) return undefined;
  const path = join(dir, "events.jsonl");
  const cacheKey = `${workdir}\u0000${key}`;
  const cached = folded.get(cacheKey);
  // one fold at a time per run: a second reader waits for the first, then folds what is left
  const turn = (cached?.pending ?? Promise.resolve()).then(() => foldLog(key, path, cacheKey, files));
  if (cached) cached.pending = turn.catch(() => undefined);
  const got = await turn;
  if (got === undefined) return undefined;
  const live = await isRunLive(workdir, rootRunOf(key), machineName(), host);
  // a lane's log starts at its first iteration: its pipeline is its run's (the nearest run.json up the key)
  let file = got.view.summary.file;
  const parts = parseRunKey(key)!;
  for (let n = parts.length; file === null && n > 0; n -= 2) {
    try {
      const info = JSON.parse(files.readText(join(runsDir(workdir), ...parts.slice(0, n), "run.json"))) as { file?: unknown };
      if (typeof info.file === "string") file = info.file;
    } catch {
      // no run.json here: look further up
    }
  }
  return { view: got.view, offset: got.offset, live, file, ...(got.problem === undefined ? {} : { problem: got.problem }) };
}

async function foldLog(key: string, path: string, cacheKey: string, files: HostFiles): Promise<{ view: RunView; offset: number; problem?: string } | undefined> {
  let info;
  try {
    info = files.lstat(path);
  } catch {
    info = undefined;
  }
  const cached = folded.get(cacheKey);
  if (cached && info?.isFile() && info.ino === cached.ino && info.size >= cached.offset) {
    for (;;) {
      const more = await readFrom(path, cached.offset, files, 4 * 1024 * 1024);
      if (more === undefined || more.offset <= cached.offset) break;
      const splitter = new EventLineSplitter();
      splitter.push(Buffer.from(more.text), (e) => addToRunView(cached.view, e));
      cached.offset = more.offset;
    }
    folded.delete(cacheKey);
    folded.set(cacheKey, cached); // the most recent last
    return { view: cached.view, offset: cached.offset };
  }
  const view = emptyRunView(key);
  const result = await readEvents(path, (e) => addToRunView(view, e), files);
  if (result.bytes === 0 && result.problem === undefined) {
    try {
      files.readdir(dirname(path));
    } catch {
      return undefined; // no such run
    }
  }
  // kept when the log ends with a whole line: the next fold starts at a line's start
  if (info?.isFile() && info.ino !== undefined && result.problem === undefined && !result.torn && result.bytes > 0 && (await endsWithNewline(path, result.bytes, files))) {
    folded.delete(cacheKey);
    folded.set(cacheKey, { view, offset: result.bytes, ino: info.ino, pending: Promise.resolve() });
    while (folded.size > FOLDED_MAX) folded.delete(folded.keys().next().value!);
  }
  return { view, offset: result.bytes, ...(result.problem === undefined ? {} : { problem: result.problem }) };
}

async function endsWithNewline(path: string, size: number, files: HostFiles): Promise<boolean> {
  const handle = await files.openRead(path, { noFollow: true });
  try {
    const b = Buffer.alloc(1);
    await handle.read(b, 0, 1, size - 1);
    return b[0] === 10;
  } finally {
    await handle.close();
  }
}

/** The run's state as `status` says it, for the page's header. */
export function stateOfView(view: RunView, live: boolean): string {
  return runStateOf(view.summary, live);
}

export interface PhaseFiles {
  prompt: string | null;
  stdout: string | null;
  stderr: string | null;
  transcript: string | null;
  output: string | null;
  /** Bytes left out at the start of a log (its end is shown). */
  cut: { stdout: number; stderr: number };
}

const FILE_MAX = 256 * 1024;

/** The files of one phase run: its prompt, logs (their end), transcript and extracted output. */
export async function readPhaseFiles(workdir: string, key: string, phaseDir: string, files: HostFiles, max = FILE_MAX): Promise<PhaseFiles | null | undefined> {
  const dir = runFolder(workdir, key);
  if (dir === undefined || !isPhaseDirName(phaseDir)) return undefined;
  const base = join(dir, "phases", phaseDir);
  // a phase folder is a folder: one an agent replaced with a link to elsewhere is not read
  try {
    if (!files.lstat(base)?.isDirectory()) return null;
  } catch {
    return null;
  }
  const stdout = await readTextEnd(files, join(base, "stdout.log"), max);
  const stderr = await readTextEnd(files, join(base, "stderr.log"), max);
  return {
    prompt: (await readTextEnd(files, join(base, "prompt.md"), max, true)).text,
    stdout: stdout.text,
    stderr: stderr.text,
    transcript: (await readTextEnd(files, join(base, "transcript.md"), max)).text,
    output: (await readTextEnd(files, join(base, "output.json"), max, true)).text,
    cut: { stdout: stdout.cut, stderr: stderr.cut },
  };
}

/** A file's text (its last `max` bytes, or its first with `head`); a missing file or a link is null. */
async function readTextEnd(files: HostFiles, path: string, max: number, head = false): Promise<{ text: string | null; cut: number }> {
  let handle;
  try {
    handle = await files.openRead(path, { noFollow: true });
  } catch {
    return { text: null, cut: 0 };
  }
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, max);
    const start = head ? 0 : size - length;
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, start);
    return { text: buffer.toString("utf8"), cut: size - length };
  } finally {
    await handle.close();
  }
}

/** New bytes of a growing file from `offset` (at most `max`): for following a phase's output. */
export async function readFrom(path: string, offset: number, files: HostFiles, max = 64 * 1024): Promise<{ text: string; offset: number } | undefined> {
  let handle;
  try {
    handle = await files.openRead(path, { noFollow: true });
  } catch {
    return undefined;
  }
  try {
    const { size } = await handle.stat();
    if (size < offset) offset = 0;
    let start = offset;
    // far behind: skip to the last `max` bytes (the page keeps only the end anyway)
    if (size - start > max) start = size - max;
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    // a line cut at the end waits for its newline
    const end = buffer.lastIndexOf(10) + 1;
    return { text: buffer.toString("utf8", 0, end), offset: start + end };
  } finally {
    await handle.close();
  }
}

/** What a live run is doing now, from its checkpoint: the log has a phase's events only once it has finished. */
export interface Inflight {
  iteration: number;
  /** ms since the epoch of the transition that started them. */
  since: number | null;
  phases: { phase: string; attempt: number; dir: string; group: string | null }[];
  /** A retry's wait, or a hook, or the question asked. */
  waiting: string | null;
}

const dirOf = (seq: number, phase: string): string => `${String(seq).padStart(4, "0")}-${phase}`;

/** The phases a run has in flight, as its checkpoint (the journal's last line or state.json) says. */
export function readInflight(workdir: string, key: string, files: HostFiles): Inflight | null {
  const dir = runFolder(workdir, key);
  return dir === undefined ? null : readInflightIn(dir, files);
}

export function readInflightIn(dir: string, files: HostFiles): Inflight | null {
  const text = readCheckpointFile(join(dir, "state.json"), files);
  if (text === undefined) return null;
  let snapshot: Record<string, unknown>;
  try {
    snapshot = ((JSON.parse(text) as { snapshot?: unknown }).snapshot ?? {}) as Record<string, unknown>;
  } catch {
    return null;
  }
  const a = snapshot.awaiting as Record<string, unknown> | null | undefined;
  const iteration = typeof snapshot.iteration === "number" ? snapshot.iteration : 0;
  const since = typeof snapshot.lastAt === "number" ? snapshot.lastAt : null;
  const out: Inflight = { iteration, since, phases: [], waiting: null };
  if (a === null || a === undefined || typeof a !== "object") return out;
  const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  if (a.kind === "phase" && typeof a.phase === "string") out.phases.push({ phase: a.phase, attempt: num(a.attempt), dir: dirOf(num(a.seq), a.phase), group: null });
  else if (a.kind === "group" && typeof a.group === "string" && a.running && typeof a.running === "object") {
    for (const [phase, m] of Object.entries(a.running as Record<string, { attempt?: unknown; seq?: unknown; delayMs?: unknown }>)) {
      if (typeof m?.delayMs === "number" && m.delayMs > 0) continue;
      out.phases.push({ phase, attempt: num(m?.attempt), dir: dirOf(num(m?.seq), phase), group: a.group });
    }
  } else if (a.kind === "retry" && typeof a.phase === "string") out.waiting = `${a.phase} retries in ${Math.round(num(a.delayMs) / 1000)}s`;
  else if (a.kind === "hook") out.waiting = `hook ${String(a.hook)}`;
  else if (a.kind === "answer" && typeof a.phase === "string") out.waiting = `${a.phase} waits for an answer`;
  return out;
}
