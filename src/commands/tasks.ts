import { resolve } from "node:path";
import { describeTasks, formatTaskTable } from "../machine/describe-tasks.ts";
import { sourceTexts } from "../pipeline/load-pipeline.ts";
import { readTaskQueue } from "../run/read-task-queue.ts";
import { compileFile } from "../run/start-run.ts";
import { parseCommandArgs, type CliIo } from "./cli-io.ts";
import { printDiagnostics } from "./print-diagnostics.ts";

const USAGE = `Usage: phaseloop tasks PIPELINE [options]

Prints the pipeline's task queue in the order it is worked: id, priority,
status (done, blocked, ready: its dependencies are done, waiting: they are
not), dependencies and title. The task files are read from the workdir.

Options:
  --ready        only the tasks that can start now
  --json         a JSON array on one line, one object per task:
                 {"id","title","priority","depends_on","status","ready",
                 "reason","slug"}
                 (a GitHub Actions strategy.matrix input; see docs/ci.md)
  --workdir DIR  where the task files are (default: .)
  -h, --help     this text
`;

/** `phaseloop tasks PIPELINE` */
export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--ready", "--json"], ["--workdir"]);
  if (!parsed.ok || parsed.args.positionals.length !== 1) {
    io.stderr(`phaseloop tasks: ${parsed.ok ? (parsed.args.positionals.length === 0 ? "no pipeline given" : "give exactly one pipeline") : parsed.message}\n\n${USAGE}`);
    return 2;
  }
  const file = parsed.args.positionals[0]!;
  const workdir = resolve(io.cwd, parsed.args.values.get("--workdir") ?? ".");
  const { loaded, machine, diagnostics } = await compileFile(file);
  if (!machine) {
    await printDiagnostics(io, diagnostics, sourceTexts(loaded));
    return 2;
  }
  if (!machine.tasks) {
    io.stderr(`phaseloop tasks: ${loaded.file} has no task queue: a pipeline lists tasks under \`tasks: { source: … }\` (docs/format.md)\n`);
    return 2;
  }
  const queue = await readTaskQueue(machine.tasks, workdir, loaded);
  if (!queue.ok) {
    await printDiagnostics(io, queue.diagnostics, sourceTexts(loaded));
    return 2;
  }
  let rows = describeTasks(queue.tasks, machine.tasks.order);
  if (parsed.args.flags.has("--ready")) rows = rows.filter((r) => r.ready);
  if (parsed.args.flags.has("--json")) io.stdout(JSON.stringify(rows) + "\n");
  else if (rows.length === 0) io.stdout(parsed.args.flags.has("--ready") ? "no task is ready\n" : "the queue is empty\n");
  else io.stdout(formatTaskTable(rows));
  return 0;
}
