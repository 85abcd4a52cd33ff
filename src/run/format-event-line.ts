/**
 * One readable line per run event: the plain reporter prints these as a run
 * goes, and `phaseloop logs` prints them from events.jsonl. The tty reporter
 * reuses the small formatters (durations, counts, costs, notes).
 */
import kleur from "kleur";
import type { RunEvent } from "./run-events.ts";
import { formatFailure, formatReason } from "./format-reason.ts";

export interface EventLineOptions {
  color: boolean;
  /** Print times in UTC instead of the local time zone (stable output for tests and shared logs). */
  utc?: boolean;
}

export interface Paint {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

const plainPaint: Paint = {
  dim: (s) => s,
  bold: (s) => s,
  red: (s) => s,
  green: (s) => s,
  yellow: (s) => s,
  cyan: (s) => s,
};

// kleur's switch is global; each painter sets it just before use so a
// colourless caller (piped output) and a colourful one can share the module.
function kleurPaint(style: "dim" | "bold" | "red" | "green" | "yellow" | "cyan"): (s: string) => string {
  return (s) => {
    kleur.enabled = true;
    return kleur[style](s);
  };
}

const colorPaint: Paint = {
  dim: kleurPaint("dim"),
  bold: kleurPaint("bold"),
  red: kleurPaint("red"),
  green: kleurPaint("green"),
  yellow: kleurPaint("yellow"),
  cyan: kleurPaint("cyan"),
};

export function paintFor(color: boolean): Paint {
  return color ? colorPaint : plainPaint;
}

/** `4.1s`, `0.3s`, `5m02s`, `1h05m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 60_000) {
    const tenths = Math.round(ms / 100);
    if (tenths < 600) return `${(tenths / 10).toFixed(1)}s`;
  }
  const totalSeconds = Math.round(ms / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  if (hours > 0) return `${hours}h${String(minutes).padStart(2, "0")}m`;
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}

/** A whole-second delay as users write them: `20s`, `2m`, `1m30s`, `250ms`. */
export function formatDelay(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const totalSeconds = Math.round(ms / 1000);
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  let text = "";
  if (hours > 0) text += `${hours}h`;
  if (minutes > 0) text += `${minutes}m`;
  if (seconds > 0 || text === "") text += `${seconds}s`;
  return text;
}

/** `1,200`: grouping written out by hand so the output does not depend on the locale. */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const sign = n < 0 ? "-" : "";
  const [whole = "0", fraction] = Math.abs(n).toString().split(".");
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return sign + grouped + (fraction === undefined ? "" : `.${fraction}`);
}

/** `$0.02`, `$12.40`; sub-cent costs keep four decimals so they do not read as free. */
export function formatCost(usd: number): string {
  if (!Number.isFinite(usd) || usd <= 0) return "$0.00";
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  const [whole = "0", cents = "00"] = usd.toFixed(2).split(".");
  return `$${formatCount(Number(whole))}.${cents}`;
}

/** `· 1,200 tokens · $0.02`, or nothing when the phase reported neither. */
export function formatUsage(tokens: number, costUsd: number): string {
  const parts: string[] = [];
  if (tokens > 0) parts.push(`${formatCount(tokens)} ${tokens === 1 ? "token" : "tokens"}`);
  if (costUsd > 0) parts.push(formatCost(costUsd));
  return parts.map((p) => ` · ${p}`).join("");
}

let lastClock = { key: "", text: "" };
export function formatClock(at: string, utc = false): string {
  // events come many a second: the time zone lookup is done once per second shown
  const key = `${utc ? "u" : "l"}${at.slice(0, 19)}`;
  if (key === lastClock.key && at.length >= 19) return lastClock.text;
  const text = clockOf(at, utc);
  lastClock = { key, text };
  return text;
}

function clockOf(at: string, utc: boolean): string {
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return "--:--:--";
  const h = utc ? date.getUTCHours() : date.getHours();
  const m = utc ? date.getUTCMinutes() : date.getMinutes();
  const s = utc ? date.getUTCSeconds() : date.getSeconds();
  return [h, m, s].map((v) => String(v).padStart(2, "0")).join(":");
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** Caps a list for one line: `a, b, c and 4 more`. */
export function formatList(items: readonly string[], max = 5): string {
  if (items.length <= max) return items.join(", ");
  return `${items.slice(0, max).join(", ")} and ${items.length - max} more`;
}

function formatCommand(command: string[] | string): string {
  const text = typeof command === "string" ? command : command.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
  const oneLine = text.replace(/\s*\n\s*/g, " ");
  return oneLine.length > 80 ? `${oneLine.slice(0, 79)}…` : oneLine;
}

/** Words for an outcome, coloured by how it ended. */
export function formatOutcome(outcome: string, paint: Paint): string {
  switch (outcome) {
    case "complete":
      return paint.green(paint.bold(outcome));
    case "failed":
      return paint.red(paint.bold(outcome));
    default:
      return paint.yellow(paint.bold(outcome));
  }
}

/** The body of a line without its time stamp: shared by every reporter. */
export function formatEventText(event: RunEvent, paint: Paint): string {
  switch (event.type) {
    case "run.started":
      return `${paint.bold(`run ${event.run}`)} started · ${event.pipeline} (${event.file}) · up to ${plural(event.max_iterations, "iteration")}`;
    case "run.resumed":
      return `${paint.bold(`run ${event.run}`)} resumed at iteration ${event.iteration}${event.max_iterations === undefined ? "" : ` of ${event.max_iterations}`}${event.phase === null ? "" : `, phase ${event.phase}`}`;
    case "iteration.started":
      return paint.bold(`iteration ${event.iteration}`) + " started" + (event.task === null ? "" : ` · task ${event.task}`);
    case "phase.started": {
      const what = event.kind === "run" ? ` · $ ${formatCommand(event.command)}` : event.kind === "group" && event.members ? ` · ${event.members.join(", ")} at once` : event.kind === "pipeline" ? ` · pipeline ${formatCommand(event.command)}${event.sub ? ` (${event.sub})` : ""}` : "";
      return `iteration ${event.iteration} · ${paint.cyan(event.phase)} started${event.kind === "group" ? "" : ` (attempt ${event.attempt})`}${what}`;
    }
    case "phase.output":
      return `${paint.dim("│")} ${event.stream === "stderr" ? paint.yellow(event.line) : event.line}`;
    case "phase.skipped":
      return `iteration ${event.iteration} · ${paint.cyan(event.phase)} ${paint.dim("skipped")}${event.reason === "" ? "" : `: ${event.reason}`}`;
    case "phase.finished": {
      const head = `iteration ${event.iteration} · ${paint.cyan(event.phase)}`;
      const usage = formatUsage(event.tokens, event.cost_usd) + (event.join && event.status !== "failed" ? ` (join ${event.join})` : "");
      if (event.status === "failed") return `${head} ${paint.red("failed")} in ${formatDuration(event.duration_ms)}: ${formatFailure(event)}${usage}`;
      const status = event.status === "succeeded" ? paint.green("succeeded") : paint.dim(event.status);
      return `${head} ${status} in ${formatDuration(event.duration_ms)}${usage}`;
    }
    case "phase.retry": {
      const why = formatFailure({ error: event.error, message: event.message, exit_code: null });
      return `${paint.cyan(event.phase)} · ${paint.yellow(`retrying in ${formatDelay(event.delay_ms)}`)} (${why}) · attempt ${event.attempt} next`;
    }
    case "policy.violation":
      return `${paint.cyan(event.phase)} · ${paint.red("policy violation")} (${event.action}): ${plural(event.paths.length, "file")} outside the write globs: ${formatList(event.paths)}`;
    case "sandbox.refused":
      return `${paint.cyan(event.phase)} · ${paint.red("refused by the OS sandbox")}: ${formatList(event.refused)}`;
    case "hook.finished": {
      const took = `in ${formatDuration(event.duration_ms)}`;
      if (event.ok) return `hook ${event.hook} ${paint.green("ok")} ${took}`;
      const exit = event.exit_code === null ? "" : ` (exit ${event.exit_code})`;
      return `hook ${event.hook} ${paint.red("failed")}${exit} ${took}${event.message === null ? "" : `: ${event.message}`}`;
    }
    case "iteration.finished": {
      const changed = event.measured === false ? "changes not measured" : event.changes.length === 0 ? paint.yellow("no files changed") : `${plural(event.changes.length, "file")} changed`;
      return `${paint.bold(`iteration ${event.iteration}`)} finished · ${changed}`;
    }
    case "task.updated": {
      const status = event.status === "done" ? paint.green("done") : event.status === "blocked" ? paint.red("blocked") : event.status;
      return `task ${event.task} ${status} (${plural(event.attempts, "attempt")})${event.reason === null ? "" : `: ${event.reason}`}`;
    }
    case "question.asked":
      return `${paint.cyan(event.phase)} ${paint.bold("asks:")} ${event.question}`;
    case "question.answered":
      return `${paint.cyan(event.phase)} answered: ${event.answer}`;
    case "note":
      return event.level === "warning" ? `${paint.yellow("warning:")} ${event.message}` : `${paint.dim("note:")} ${event.message}`;
    case "run.interrupted":
      return `${paint.yellow(paint.bold("interrupted"))} by ${event.signal} at iteration ${event.iteration}${event.phase === null ? "" : `, phase ${event.phase}`} · resume with phaseloop resume ${event.run}`;
    case "lane.started":
      return `${paint.bold(`task ${event.task}`)} started in its lane · branch ${event.branch}`;
    case "lane.finished":
      return `task ${event.task} · its loop ended ${formatOutcome(event.outcome, paint)}: ${formatReason(event.reason)} · ${plural(event.iterations, "iteration")} in ${formatDuration(event.elapsed_ms)}${formatUsage(event.tokens, event.cost_usd)}`;
    case "lane.interrupted":
      return `task ${event.task} · ${paint.yellow("interrupted")} by ${event.signal} at iteration ${event.iteration}${event.phase === null ? "" : `, phase ${event.phase}`}`;
    case "lane.merged":
      return `task ${event.task} ${paint.green("merged")} into ${event.into}${event.rebased ? " (rebased and verified again)" : ""}`;
    case "lane.conflict":
      return `task ${event.task} ${paint.yellow("conflicts")} with ${event.into} in ${formatList(event.files)}: ${event.action === "rebased" ? "rebased, verifying again" : "blocked"}`;
    case "lane.blocked":
      return `task ${event.task} ${event.status === "blocked" ? paint.red("blocked") : paint.yellow("stopped")}: ${event.reason} · its work is on branch ${event.branch}`;
    case "run.finished": {
      const reason = formatReason(event.reason);
      return `run ${formatOutcome(event.outcome, paint)}: ${reason} · ${plural(event.iterations, "iteration")} in ${formatDuration(event.elapsed_ms)}${formatUsage(event.tokens, event.cost_usd)}`;
    }
  }
}

/**
 * `12:04:05 iteration 2 · step started (attempt 1)`. Output lines carry no
 * time stamp: they are indented under the phase that printed them.
 */
export function formatEventLine(event: RunEvent, options: EventLineOptions): string {
  const paint = paintFor(options.color);
  const text = laneTag(event, paint) + formatEventText(event, paint);
  if (event.type === "phase.output") return `         ${text}`;
  return `${paint.dim(formatClock(event.at, options.utc))} ${text}`;
}

/** `[T3] `: the lane an event comes from, in a run with parallel lanes (events about a task name it already). */
export function laneTag(event: RunEvent, paint: Paint): string {
  if (typeof event.task !== "string" || event.type.startsWith("lane.") || event.type.startsWith("task.") || event.type.startsWith("iteration.")) return "";
  return paint.bold(`[${event.task}] `);
}
