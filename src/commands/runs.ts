/**
 * `phaseloop runs [--json] [--workdir DIR]`: the runs of a workdir, newest
 * first: id, pipeline, start, duration, outcome, iterations, tokens and cost.
 */
import { resolve } from "node:path";
import process from "node:process";
import { parseCommandArgs, writerOf, type CommandIo } from "../reporters/command-io.ts";
import type { Host } from "../host/host.ts";
import { hostOf } from "./cli-io.ts";
import { formatCost, formatCount, formatDuration, paintFor, type Paint } from "../run/format-event-line.ts";
import { listRuns, type RunListEntry } from "../records/list-runs.ts";

const USAGE = "Usage: phaseloop runs [options]";

const HELP = `${USAGE}

Lists the runs of a workdir, newest first: id, pipeline, when it started
(UTC), how long it took, its outcome (or running, awaiting answer,
interrupted, crashed), iterations, tokens and cost.

Options:
  --json          the same as a JSON array
  --workdir DIR   whose runs (default: .)
  -h, --help      this text
`;

export async function main(argv: string[], io: CommandIo & { host?: Host }): Promise<number> {
  const out = writerOf(io.stdout);
  const err = writerOf(io.stderr);
  const parsed = parseCommandArgs(argv, ["--json", "--help", "-h"], ["--workdir"]);
  if (!parsed.ok || parsed.args.positionals.length > 0) {
    err(`phaseloop runs: ${parsed.ok ? `unexpected argument "${parsed.args.positionals[0]}"` : parsed.message}\n${USAGE}\n`);
    return 2;
  }
  const { args } = parsed;
  if (args.flags.has("--help") || args.flags.has("-h")) {
    out(HELP);
    return 0;
  }
  const workdir = resolve(io.cwd ?? process.cwd(), args.values.get("--workdir") ?? ".");
  const runs = await listRuns(workdir, hostOf(io));
  if (args.flags.has("--json")) {
    out(`${JSON.stringify(runs, null, 2)}\n`);
    return 0;
  }
  if (runs.length === 0) {
    out(`no runs in ${workdir}/.phaseloop\n`);
    return 0;
  }
  out(formatRunTable(runs, paintFor(io.color ?? false)));
  return 0;
}

const HEADERS = ["RUN", "PIPELINE", "STARTED (UTC)", "DURATION", "OUTCOME", "ITERATIONS", "TOKENS", "COST"] as const;
/** Columns aligned right: the numbers. */
const RIGHT = new Set([3, 5, 6, 7]);

export function formatRunTable(runs: readonly RunListEntry[], paint: Paint): string {
  const rows = runs.map((r) => [
    r.run,
    r.pipeline ?? "?",
    r.started_at === null ? "?" : r.started_at.replace("T", " ").replace(/(\.\d+)?Z$/, ""),
    r.duration_ms === null ? "-" : formatDuration(r.duration_ms),
    r.outcome,
    r.iterations === null ? "-" : formatCount(r.iterations),
    formatCount(r.tokens),
    formatCost(r.cost_usd),
  ]);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: readonly string[], color?: (cell: string, i: number) => string) =>
    cells
      .map((c, i) => {
        const padded = RIGHT.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!);
        return color ? color(padded, i) : padded;
      })
      .join("  ")
      .trimEnd();
  const paintOutcome = (cell: string, i: number): string => {
    if (i !== 4) return cell;
    const word = cell.trim();
    return word === "complete" ? paint.green(cell) : word === "failed" || word === "crashed" ? paint.red(cell) : word === "running" ? paint.cyan(cell) : paint.yellow(cell);
  };
  return [paint.dim(line(HEADERS)), ...rows.map((row) => line(row, paintOutcome))].join("\n") + "\n";
}
