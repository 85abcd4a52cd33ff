/**
 * Reading a run directory back through its validators. A file a crash, a disk
 * or a person damaged is an input problem (`StateProblem`: the file, what is
 * wrong, what to do), never an exception. Reading never changes a file;
 * `repairTornTail` is the one repair, made by `resume` once it holds the lock.
 */
import { basename, dirname, join } from "node:path";
import type { FileInfo, HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import type { Machine } from "../machine/types.ts";
import type { Check } from "../runtime/check-shape.ts";
import { journalPath, lastJournalLine } from "../runtime/checkpoint-file.ts";
import { checkCheckpoint, checkCheckpointShape, checkEvent, checkIterationRecord, checkRunInfo, checkSavedBaseline } from "./check-run-state.ts";
import type { Checkpoint } from "./checkpoint.ts";
import type { RunInfo } from "./run-info.ts";

export interface StateProblem {
  /** The file (absolute path). */
  file: string;
  /** 1-based line, for JSON-lines files. */
  line?: number;
  /** What is wrong. */
  message: string;
  /** What the user can do. */
  hint: string;
}

export type Loaded<T> = { ok: true; value: T } | { ok: false; problem: StateProblem };

/** What the user can do about a run whose state cannot be used. */
export function startOverHint(runId: string, file?: string): string {
  return `start the run over with \`phaseloop run ${file ?? "PIPELINE"}\` (run ${runId}'s log stays readable with \`phaseloop logs ${runId}\`)`;
}

/** What `resume --force` would do about a file, or starting over. */
export function forceHint(runId: string, what: string, file?: string): string {
  return `\`phaseloop resume ${runId} --force\` ${what}, or ${startOverHint(runId, file)}`;
}

type Text = { kind: "text"; text: string } | { kind: "missing" } | { kind: "unreadable"; message: string };

/** A file's text; a missing file is `missing`, anything else that is not a readable regular file is `unreadable`. */
export function readStateText(path: string, files: HostFiles = nodeFiles): Text {
  let stat;
  try {
    stat = files.lstat(path);
  } catch (error) {
    return { kind: "unreadable", message: `cannot be read: ${(error as Error).message}` };
  }
  if (!stat) return { kind: "missing" };
  if (!stat.isFile()) return { kind: "unreadable", message: `is ${kindOf(stat)}, not a file` };
  try {
    return { kind: "text", text: files.readText(path) };
  } catch (error) {
    return { kind: "unreadable", message: `cannot be read: ${(error as Error).message}` };
  }
}

function kindOf(stat: FileInfo): string {
  if (stat.isDirectory()) return "a directory";
  if (stat.isSymbolicLink()) return "a symbolic link";
  if (stat.isFIFO()) return "a named pipe";
  if (stat.isSocket()) return "a socket";
  return "a special file";
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (text.trim() === "") return { ok: false, message: "is empty" };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: `is not valid JSON (${(error as Error).message})` };
  }
}

/** run.json: what the run is (pipeline file, hash, params). */
export function readRunInfo(dir: string, runId: string, files: HostFiles = nodeFiles): Loaded<RunInfo> {
  const file = join(dir, "run.json");
  const hint = forceHint(runId, "rebuilds it from the run.started event of events.jsonl");
  const t = readStateText(file, files);
  if (t.kind === "missing") return { ok: false, problem: { file, message: "is missing: the run stopped before it was set up", hint } };
  if (t.kind === "unreadable") return { ok: false, problem: { file, message: t.message, hint } };
  const parsed = parseJson(t.text);
  if (!parsed.ok) return { ok: false, problem: { file, message: parsed.message, hint } };
  const problem = checkRunInfo(parsed.value, "");
  if (problem) return { ok: false, problem: { file, message: problem, hint } };
  return { ok: true, value: parsed.value as RunInfo };
}

/**
 * A file replaced as the checkpoint is (see CheckpointFile): the file, or its complete
 * replacement `.next` when a crash came between removing the one and renaming the other.
 */
function readReplacedText(path: string, files: HostFiles): { t: Text; file: string } {
  // a checkpoint recorded in the journal and not yet in the file is the newest (see CheckpointFile)
  const journal = journalPath(path);
  const recorded = lastJournalLine(journal, files);
  if (recorded !== undefined) return { t: { kind: "text", text: recorded }, file: journal };
  const t = readStateText(path, files);
  if (t.kind !== "missing") return { t, file: path };
  const next = readStateText(`${path}.next`, files);
  return next.kind === "text" && next.text.trim() !== "" ? { t: next, file: `${path}.next` } : { t, file: path };
}

export type CheckpointRead = { kind: "ok"; checkpoint: Checkpoint; file: string } | { kind: "missing" } | { kind: "invalid"; problem: StateProblem };

/**
 * The checkpoint: state.json, or its complete replacement `state.json.next`
 * when a crash came between removing the one and renaming the other (see
 * CheckpointFile). With a machine, the names in it must be the pipeline's.
 */
export function readCheckpoint(dir: string, runId: string, machine?: Machine, file?: string, files: HostFiles = nodeFiles): CheckpointRead {
  const hint = forceHint(runId, "rebuilds the checkpoint from events.jsonl", file);
  const { t, file: used } = readReplacedText(join(dir, "state.json"), files);
  if (t.kind === "missing") return { kind: "missing" };
  if (t.kind === "unreadable") return { kind: "invalid", problem: { file: used, message: t.message, hint } };
  const parsed = parseJson(t.text);
  if (!parsed.ok) return { kind: "invalid", problem: { file: used, message: parsed.message, hint } };
  const problem = machine ? checkCheckpoint(parsed.value, machine) : checkCheckpointShape(parsed.value, "");
  if (problem) return { kind: "invalid", problem: { file: used, message: problem, hint } };
  return { kind: "ok", checkpoint: parsed.value as Checkpoint, file: used };
}

export interface JsonlScan {
  /** Complete lines. */
  lines: number;
  /** Bytes at the end that are a torn (partly written) line: a crash mid-write. */
  tornBytes: number;
  /** The last line is whole but lacks its newline. */
  needsNewline: boolean;
  /** Lines skipped as unusable (lenient reading only). */
  skipped: number;
}

/**
 * Reads a JSON-lines file: every complete line must be a JSON value that
 * passes `check` and `accept` (which sees them in order); a last line without
 * its newline is whole if it passes, else a torn write. Lenient reading skips
 * bad lines instead of reporting the first.
 */
export function scanJsonl(path: string, check: Check, accept: (value: unknown, line: number) => string | undefined, hint: string, lenient = false, files: HostFiles = nodeFiles): Loaded<JsonlScan> {
  let stat;
  try {
    stat = files.lstat(path);
  } catch (error) {
    return { ok: false, problem: { file: path, message: `cannot be read: ${(error as Error).message}`, hint } };
  }
  if (!stat) return { ok: true, value: { lines: 0, tornBytes: 0, needsNewline: false, skipped: 0 } };
  if (!stat.isFile()) return { ok: false, problem: { file: path, message: `is ${kindOf(stat)}, not a file`, hint: `move it away (the run then starts the file anew), or ${startOverHint(runIdOf(path))}` } };
  let bytes: Uint8Array;
  try {
    bytes = files.readBytes(path);
  } catch (error) {
    return { ok: false, problem: { file: path, message: `cannot be read: ${(error as Error).message}`, hint } };
  }
  const end = bytes.lastIndexOf(10) + 1;
  const scan: JsonlScan = { lines: 0, tornBytes: 0, needsNewline: false, skipped: 0 };
  const judge = (text: string, line: number): string | undefined => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return "the line is not valid JSON";
    }
    return check(value, "")?.replace(/^the file:/, "the line:") ?? accept(value, line);
  };
  const utf8 = new TextDecoder();
  const text = utf8.decode(bytes.subarray(0, end));
  let line = 0;
  let start = 0;
  while (start < text.length) {
    const stop = text.indexOf("\n", start);
    const raw = text.slice(start, stop);
    start = stop + 1;
    line += 1;
    if (raw.trim() === "") continue;
    const problem = judge(raw, line);
    if (problem === undefined) scan.lines += 1;
    else if (lenient) scan.skipped += 1;
    else return { ok: false, problem: { file: path, line, message: problem, hint } };
  }
  const tail = utf8.decode(bytes.subarray(end));
  if (tail.trim() !== "") {
    if (judge(tail, line + 1) === undefined) {
      scan.lines += 1;
      scan.needsNewline = true;
    } else scan.tornBytes = bytes.length - end;
  } else if (tail.length > 0) scan.tornBytes = bytes.length - end;
  return { ok: true, value: scan };
}

/** The run id of a file in a run directory. */
function runIdOf(path: string): string {
  return basename(dirname(path));
}

/** Cuts a torn last line off (or ends a whole one with its newline), so the next record starts on a line of its own. */
export function repairTornTail(path: string, scan: JsonlScan, files: HostFiles = nodeFiles): void {
  if (scan.tornBytes > 0) {
    const size = files.lstat(path)?.size ?? 0;
    files.truncate(path, size - scan.tornBytes);
  } else if (scan.needsNewline) files.appendText(path, "\n");
}

export interface EventLogScan extends JsonlScan {
  lastSeq: number;
  /** The log holds `run.finished`. */
  finished: boolean;
}

/** events.jsonl: valid events with increasing seq. */
export function scanEventLog(dir: string, runId: string, lenient = false, files: HostFiles = nodeFiles): Loaded<EventLogScan> {
  let lastSeq = 0;
  let finished = false;
  const hint = lenient ? startOverHint(runId) : `\`phaseloop resume ${runId} --force\` continues with the lines that can be read (the others are kept and skipped), or ${startOverHint(runId)}`;
  const r = scanJsonl(
    join(dir, "events.jsonl"),
    checkEvent,
    (value) => {
      const seq = (value as { seq: number }).seq;
      if (seq <= lastSeq) return `seq: ${seq} does not follow ${lastSeq}`;
      lastSeq = seq;
      if ((value as { type: string }).type === "run.finished") finished = true;
      return undefined;
    },
    hint,
    lenient,
    files,
  );
  return r.ok ? { ok: true, value: { ...r.value, lastSeq, finished } } : r;
}

export interface IterationLogScan extends JsonlScan {
  iterations: Set<number>;
}

/** iterations.jsonl: one record per finished iteration. */
export function scanIterationLog(dir: string, runId: string, lenient = false, files: HostFiles = nodeFiles): Loaded<IterationLogScan> {
  const iterations = new Set<number>();
  const hint = lenient ? startOverHint(runId) : `\`phaseloop resume ${runId} --force\` continues with the lines that can be read (the others are kept and skipped), or ${startOverHint(runId)}`;
  const r = scanJsonl(
    join(dir, "iterations.jsonl"),
    checkIterationRecord,
    (value) => {
      iterations.add((value as { iteration: number }).iteration);
      return undefined;
    },
    hint,
    lenient,
    files,
  );
  return r.ok ? { ok: true, value: { ...r.value, iterations } } : r;
}

/** baseline.json, the measure of the open iteration's start. Missing is fine (the iteration measures from now). */
export function checkBaselineFile(dir: string, runId: string, files: HostFiles = nodeFiles): StateProblem | undefined {
  const hint = `\`phaseloop resume ${runId} --force\` measures this iteration's changes from now on, or ${startOverHint(runId)}`;
  const { t, file } = readReplacedText(join(dir, "baseline.json"), files);
  if (t.kind === "missing") return undefined;
  if (t.kind === "unreadable") return { file, message: t.message, hint };
  const parsed = parseJson(t.text);
  if (!parsed.ok) return { file, message: parsed.message, hint };
  const problem = checkSavedBaseline(parsed.value, "");
  return problem ? { file, message: problem, hint } : undefined;
}

/** A problem as the CLI prints it: `FILE[:LINE]: error CODE what` and a hint. */
export function formatStateProblem(p: StateProblem, code = "RUN_STATE_INVALID"): string {
  return `${p.file}${p.line === undefined ? "" : `:${p.line}`}: error ${code} ${p.message}\n  hint: ${p.hint}\n`;
}

/** phases/, where each phase run keeps its prompt and logs: a directory, or absent. */
export function checkPhasesDir(dir: string, runId: string, files: HostFiles = nodeFiles): StateProblem | undefined {
  const path = join(dir, "phases");
  try {
    const stat = files.lstat(path);
    if (!stat || stat.isDirectory()) return undefined;
    return { file: path, message: `is ${stat.isFile() ? "a file" : kindOf(stat)}, not a directory`, hint: `move it away (the run then starts it anew), or ${startOverHint(runId)}` };
  } catch (error) {
    return { file: path, message: `cannot be read: ${(error as Error).message}`, hint: startOverHint(runId) };
  }
}

/**
 * What `resume` would refuse in a run directory, for `status` to say before
 * anyone tries: run.json, the checkpoint's shape, iterations.jsonl and the baseline.
 */
export function runStateProblems(dir: string, runId: string, files: HostFiles = nodeFiles): StateProblem[] {
  const problems: StateProblem[] = [];
  const info = readRunInfo(dir, runId, files);
  if (!info.ok) problems.push(info.problem);
  const cp = readCheckpoint(dir, runId, undefined, undefined, files);
  if (cp.kind === "invalid") problems.push(cp.problem);
  const iterations = scanIterationLog(dir, runId, false, files);
  if (!iterations.ok) problems.push(iterations.problem);
  const baseline = checkBaselineFile(dir, runId, files);
  if (baseline) problems.push(baseline);
  const phases = checkPhasesDir(dir, runId, files);
  if (phases) problems.push(phases);
  return problems;
}

/**
 * A child's logs (a sub-pipeline's, a lane's) as a crash left them, repaired as resume repairs
 * the run's own: a line torn at the end is cut off. A log unreadable further up is left as it is;
 * whether each log could be read.
 */
export function repairTornLogs(dir: string, runId: string, files: HostFiles = nodeFiles): { events: boolean; iterations: boolean } {
  const events = scanEventLog(dir, runId, false, files);
  if (events.ok) repairTornTail(join(dir, "events.jsonl"), events.value, files);
  const iterations = scanIterationLog(dir, runId, false, files);
  if (iterations.ok) repairTornTail(join(dir, "iterations.jsonl"), iterations.value, files);
  return { events: events.ok, iterations: iterations.ok };
}
