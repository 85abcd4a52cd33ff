/**
 * `phaseloop report [RUN_ID] --html [-o FILE] [--workdir DIR]`: the run's page
 * as one self-contained HTML file (graph, timeline, outputs, costs; read-only)
 * that opens from disk with no network. Without -o it goes to the run folder,
 * beside summary.md, as report.html.
 */
import { join, resolve } from "node:path";
import process from "node:process";
import { parseCommandArgs, writerOf, type CommandIo } from "../reporters/command-io.ts";
import type { Host } from "../host/host.ts";
import { hostOf } from "./cli-io.ts";
import { runDir } from "../records/run-log.ts";
import { selectRun } from "../records/select-run.ts";

const USAGE = "Usage: phaseloop report [RUN_ID] --html [options]";

const HELP = `${USAGE}

Writes a run's page (the latest run unless RUN_ID, or a unique prefix of it,
is given) as one HTML file with everything inside: the graph with the path
taken, the iterations, the phases' prompts and output (the latest and the
failed ones), tokens and cost. It opens from disk and makes no request.

Options:
  --html               the page as one HTML file (the only form there is)
  -o, --output FILE    where to write it (default: .phaseloop/runs/RUN_ID/
                       report.html, beside summary.md; "-o -": standard output)
  --workdir DIR        where the run's .phaseloop/ is (default: .)
  -h, --help           this text
`;

export async function main(argv: string[], io: CommandIo & { host?: Host }): Promise<number> {
  const host = hostOf(io);
  const out = writerOf(io.stdout);
  const err = writerOf(io.stderr);
  const parsed = parseCommandArgs(argv, ["--html", "--help", "-h"], ["-o", "--output", "--workdir"]);
  if (!parsed.ok || parsed.args.positionals.length > 1) {
    err(`phaseloop report: ${parsed.ok ? "expected at most one run id" : parsed.message}\n${USAGE}\n`);
    return 2;
  }
  const { args } = parsed;
  if (args.flags.has("--help") || args.flags.has("-h")) {
    out(HELP);
    return 0;
  }
  if (!args.flags.has("--html")) {
    err(`phaseloop report: say the format: --html (the one there is)\n${USAGE}\n`);
    return 2;
  }
  const cwd = io.cwd ?? process.cwd();
  const workdir = resolve(cwd, args.values.get("--workdir") ?? ".");
  const selection = await selectRun(workdir, args.positionals[0], host.files);
  if (!selection.ok) {
    err(`phaseloop report: ${selection.message}${selection.hint === undefined ? "" : `\n  hint: ${selection.hint}`}\n`);
    return 2;
  }
  const target = args.values.get("-o") ?? args.values.get("--output");
  const { buildRunReport, writeRunReport } = await import("../ui/write-report.ts");
  if (target === "-") {
    const built = await buildRunReport(workdir, selection.runId, host);
    if (!built.ok) {
      err(`phaseloop report: ${built.message}\n`);
      return 1;
    }
    out(built.html);
    return 0;
  }
  const file = target === undefined ? join(runDir(workdir, selection.runId), "report.html") : resolve(cwd, target);
  try {
    const written = await writeRunReport(workdir, selection.runId, file, host);
    if (!written.ok) {
      err(`phaseloop report: ${written.message}\n`);
      return 1;
    }
  } catch (error) {
    err(`phaseloop report: cannot write ${file}: ${(error as Error).message}\n`);
    return 1;
  }
  out(`${file}\n`);
  return 0;
}
