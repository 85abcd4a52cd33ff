/**
 * `phaseloop status [RUN_ID] [--json] [--workdir DIR]`: where a run stands
 * (read by records/run-status.ts), in words or as JSON.
 */
import { basename, resolve } from "node:path";
import { parseCommandArgs, writerOf } from "../reporters/command-io.ts";
import type { CommandIo } from "../reporters/command-io.ts";
import type { Host } from "../host/host.ts";
import { hostOf } from "./cli-io.ts";
import { formatClock, formatCost, formatCount, formatDuration, formatOutcome, paintFor, plural } from "../run/format-event-line.ts";
import { formatFailure } from "../run/format-reason.ts";
import { runDir } from "../records/run-log.ts";
import { selectRun } from "../records/select-run.ts";
import { formatLane, formatLanesHeading } from "../lanes/format-lanes.ts";
import { readRunStatus, UnreadableLogError, type RunStatus } from "../records/run-status.ts";

export { readRunStatus, UnreadableLogError, type RunStatus };

const USAGE = "Usage: phaseloop status [RUN_ID] [options]";

const HELP = `${USAGE}

Shows where a run stands: its outcome, or the iteration and phase it is at and
how long that phase has run; phase counts, breakers, tokens and cost, and the
last error. The latest run unless RUN_ID (or a unique prefix of it) is given.

Options:
  --json          the same as one JSON object
  --workdir DIR   where the run's .phaseloop/ is (default: .)
  -h, --help      this text
`;

function formatStatus(status: RunStatus, color: boolean): string {
  const paint = paintFor(color);
  const lines: string[] = [];
  const row = (label: string, value: string): void => {
    lines.push(`${paint.dim(label.padEnd(11))}${value}`);
  };
  const title = status.pipeline === null ? `run ${status.run}` : `run ${status.run} · ${status.pipeline}${status.file === null ? "" : ` (${status.file})`}`;
  lines.push(paint.bold(title));
  const stateWord =
    status.outcome !== null
      ? formatOutcome(status.state, paint) + status.headline.slice(status.state.length)
      : status.state === "running"
        ? paint.cyan(status.headline)
        : status.state === "empty"
          ? status.headline
          : paint.yellow(status.headline);
  row("status", stateWord + (status.outcome === null ? "" : paint.dim(` · exit ${status.outcome.exit_code}`)));
  if (status.started_at !== null) {
    const elapsed = status.elapsed_ms;
    const last = status.last_event_at === null ? "" : ` · last event ${formatClock(status.last_event_at)}`;
    row("started", `${status.started_at.replace("T", " ").replace(/\.\d+Z$|Z$/, "")} UTC${last}${elapsed === null || Number.isNaN(elapsed) ? "" : ` · ${formatDuration(elapsed)}`}`);
  }
  row("iteration", `${status.iteration}${status.max_iterations === null ? "" : ` of ${status.max_iterations}`}`);
  if (status.phase !== null && status.outcome === null) {
    const attempt = status.phase_attempt !== null && status.phase_attempt > 1 ? ` (attempt ${status.phase_attempt})` : "";
    const took = status.phase_elapsed_ms === null ? "" : ` · ${status.state === "running" ? "running for" : "ran for"} ${formatDuration(status.phase_elapsed_ms)}`;
    row("phase", `${paint.cyan(status.phase)}${attempt}${took}`);
  }
  const c = status.counters;
  const counts = [`${formatCount(c.phases_run)} run`, `${formatCount(c.succeeded)} succeeded`, c.failed > 0 ? paint.red(`${formatCount(c.failed)} failed`) : "0 failed"];
  if (c.skipped > 0) counts.push(`${formatCount(c.skipped)} skipped`);
  counts.push(plural(c.retries, "retry", "retries"));
  row("phases", counts.join(" · "));
  const breakerText = Object.entries(status.breakers).map(([name, b]) => {
    const text = `${name.replace(/_/g, " ")} ${b.count ?? "?"}${b.limit === null ? "" : `/${b.limit}`}`;
    return b.count !== null && b.limit !== null && b.count >= b.limit ? paint.red(text) : text;
  });
  if (breakerText.length > 0) row("breakers", breakerText.join(" · "));
  const extras: string[] = [];
  if (c.policy_violations > 0) extras.push(paint.red(plural(c.policy_violations, "policy violation")));
  if (c.sandbox_refusals > 0) extras.push(paint.red(plural(c.sandbox_refusals, "sandbox refusal")));
  if (c.hook_failures > 0) extras.push(paint.red(plural(c.hook_failures, "failed hook")));
  if (c.warnings > 0) extras.push(paint.yellow(plural(c.warnings, "warning")));
  if (c.resumes > 0) extras.push(plural(c.resumes, "resume"));
  if (extras.length > 0) row("notes", extras.join(" · "));
  if (status.tokens > 0 || status.cost_usd > 0) row("usage", `${plural(status.tokens, "token")} · ${formatCost(status.cost_usd)}`);
  if (status.tasks.total > 0) row("tasks", `${status.tasks.done} done · ${status.tasks.blocked} blocked · ${status.tasks.pending} pending`);
  if (status.lanes) {
    row("lanes", formatLanesHeading(status.lanes));
    for (const lane of status.lanes.lanes) row("", formatLane(lane));
  }
  const e = status.last_error;
  if (e !== null) {
    row("last error", `iteration ${e.iteration} · ${e.phase}${e.attempt > 1 ? ` (attempt ${e.attempt})` : ""}: ${paint.red(formatFailure(e))}`);
  }
  for (const p of status.problems) row("damaged", paint.red(`${basename(p.file)}${p.line === undefined ? "" : `:${p.line}`}: ${p.message}`) + paint.dim(` (${p.hint})`));
  if (status.log.torn_last_line) row("log", paint.yellow("the last line of events.jsonl is torn (a crash mid-write); it was skipped"));
  if (status.log.malformed_lines > 0) row("log", paint.yellow(`${plural(status.log.malformed_lines, "line")} of events.jsonl could not be read`));
  return `${lines.join("\n")}\n`;
}

export async function main(argv: string[], io: CommandIo & { host?: Host }): Promise<number> {
  const host = hostOf(io);
  const out = writerOf(io.stdout);
  const err = writerOf(io.stderr);
  const parsed = parseCommandArgs(argv, ["--json", "--help", "-h"], ["--workdir"]);
  if (!parsed.ok) {
    err(`phaseloop status: ${parsed.message}\n${USAGE}\n`);
    return 2;
  }
  const { args } = parsed;
  if (args.flags.has("--help") || args.flags.has("-h")) {
    out(HELP);
    return 0;
  }
  if (args.positionals.length > 1) {
    err(`phaseloop status: expected at most one run id, got ${args.positionals.length}\n${USAGE}\n`);
    return 2;
  }
  const workdir = resolve(io.cwd ?? process.cwd(), args.values.get("--workdir") ?? ".");
  const selection = await selectRun(workdir, args.positionals[0], host.files);
  if (!selection.ok) {
    err(`phaseloop status: ${selection.message}${selection.hint === undefined ? "" : `\n  hint: ${selection.hint}`}\n`);
    return 2;
  }
  let status: RunStatus;
  try {
    status = await readRunStatus(workdir, selection.runId, host);
  } catch (error) {
    if (!(error instanceof UnreadableLogError)) throw error;
    err(`${error.file}: error RUN_STATE_INVALID ${error.message}\n  hint: the run's event log is gone; its other files are under ${runDir(workdir, selection.runId)}\n`);
    return 2;
  }
  if (args.flags.has("--json")) out(`${JSON.stringify(status, null, 2)}\n`);
  else out(formatStatus(status, io.color ?? false));
  return 0;
}
