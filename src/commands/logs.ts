/**
 * `phaseloop logs [RUN_ID] [--follow] [--json] [--workdir DIR]`: a run's
 * event log, one readable line per event (or the raw NDJSON with --json),
 * streamed from events.jsonl. --follow keeps printing as the run goes, until
 * it finishes, stops running, or the user presses Ctrl-C.
 */
import { join, resolve } from "node:path";
import { parseCommandArgs, writerOf } from "../reporters/command-io.ts";
import type { CommandIo } from "../reporters/command-io.ts";
import type { Host } from "../host/host.ts";
import { hostOf } from "./cli-io.ts";
import { formatEventLine } from "../run/format-event-line.ts";
import { followEvents, isRunLive, readEvents, runDir } from "../records/run-log.ts";
import type { RunEvent } from "../run/run-events.ts";
import { machineName } from "../runtime/run-lock.ts";
import { selectRun } from "../records/select-run.ts";

const USAGE = "Usage: phaseloop logs [RUN_ID] [options]";

const HELP = `${USAGE}

Prints a run's events, one line each. The latest run unless RUN_ID (or a
unique prefix of it) is given. Agent output is not in the event log: see
.phaseloop/runs/RUN_ID/phases/.

Options:
  -f, --follow    keep printing until the run finishes or stops running
                  (Ctrl-C stops following)
  --json          the NDJSON lines as stored (see docs/events.md)
  --workdir DIR   where the run's .phaseloop/ is (default: .)
  -h, --help      this text
`;

export interface LogsOptions {
  /** Poll interval for --follow (ms). */
  pollMs?: number;
  /** How long the log may stay still before --follow checks the run is alive (ms). */
  idleCheckMs?: number;
  /** Stops --follow; by default SIGINT does. */
  signal?: AbortSignal;
  /** Print times in UTC. */
  utc?: boolean;
}

export async function main(argv: string[], io: CommandIo & { host?: Host }, options: LogsOptions = {}): Promise<number> {
  const on = hostOf(io);
  const out = writerOf(io.stdout);
  const err = writerOf(io.stderr);
  const parsed = parseCommandArgs(argv, ["--json", "--follow", "-f", "--help", "-h"], ["--workdir"]);
  if (!parsed.ok) {
    err(`phaseloop logs: ${parsed.message}\n${USAGE}\n`);
    return 2;
  }
  const { args } = parsed;
  if (args.flags.has("--help") || args.flags.has("-h")) {
    out(HELP);
    return 0;
  }
  if (args.positionals.length > 1) {
    err(`phaseloop logs: expected at most one run id, got ${args.positionals.length}\n${USAGE}\n`);
    return 2;
  }
  const workdir = resolve(io.cwd ?? process.cwd(), args.values.get("--workdir") ?? ".");
  const selection = await selectRun(workdir, args.positionals[0], on.files);
  if (!selection.ok) {
    err(`phaseloop logs: ${selection.message}${selection.hint === undefined ? "" : `\n  hint: ${selection.hint}`}\n`);
    return 2;
  }
  const runId = selection.runId;
  const path = join(runDir(workdir, runId), "events.jsonl");
  const json = args.flags.has("--json");
  const lineOptions = { color: io.color ?? false, utc: options.utc };
  const print = (event: RunEvent): void => {
    out(json ? `${JSON.stringify(event)}\n` : `${formatEventLine(event, lineOptions)}\n`);
  };

  const unreadable = (problem: string): number => {
    err(`${path}: error RUN_STATE_INVALID ${problem}\n  hint: the run's event log cannot be read; its other files are under ${runDir(workdir, runId)}\n`);
    return 2;
  };
  if (!args.flags.has("--follow") && !args.flags.has("-f")) {
    const result = await readEvents(path, print, on.files);
    if (result.problem !== undefined) return unreadable(result.problem);
    if (result.torn && !json) err(`phaseloop logs: the last line of ${path} is torn (a crash mid-write); it was skipped\n`);
    return 0;
  }

  const probe = await readEvents(path, () => undefined, on.files);
  if (probe.problem !== undefined) return unreadable(probe.problem);
  const controller = new AbortController();
  const onSigint = (): void => controller.abort();
  const external = options.signal;
  external?.addEventListener("abort", onSigint, { once: true });
  if (external === undefined) process.once("SIGINT", onSigint);
  try {
    const host = machineName();
    const end = await followEvents(path, print, on, {
      signal: controller.signal,
      pollMs: options.pollMs,
      idleCheckMs: options.idleCheckMs,
      isLive: () => isRunLive(workdir, runId, host, on),
    });
    if (end === "aborted") return 130;
    if (end === "not_running") err(`phaseloop logs: run "${runId}" is not running; stopped following (resume with phaseloop resume ${runId})\n`);
    return 0;
  } finally {
    external?.removeEventListener("abort", onSigint);
    process.removeListener("SIGINT", onSigint);
  }
}
