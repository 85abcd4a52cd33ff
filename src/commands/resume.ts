import { resolve } from "node:path";
import { resumeInForeground } from "../control/run-in-foreground.ts";
import { hostOf, parseCommandArgs, type CliIo } from "./cli-io.ts";
import { askerFor, finish, interruptSignal, isSandboxMode, parseReporter, reporterFactory } from "./run-common.ts";
import { optimizeHotCodeOnly } from "../runtime/hot-code-only.ts";
import { keepHeapSteady } from "../runtime/steady-heap.ts";

const USAGE = `Usage: phaseloop resume [RUN_ID] [options]

Continues a run from its checkpoint (the latest run unless RUN_ID, or a unique
prefix of it, is given), re-running the phase that was in flight. A state file
that cannot be used is reported (exit 2, nothing changed).

Options:
  --answer TEXT        answer the question a waiting run asks (an ask phase
                       that ended the run with exit 3)
  --answer-file FILE   the same, from a file (its text, one final newline
                       dropped)
  --force              run a pipeline that changed since the run started;
                       rebuild what the event log can rebuild (the checkpoint,
                       run.json) and skip log lines that cannot be read
  --workdir DIR        where the run's .phaseloop/ is (default: .)
  --reporter KIND      auto | tty | plain | json (default auto)
  --sandbox MODE       auto | required | off: over the OS sandbox setting the
                       run started with (which it keeps without this option)
  -h, --help           this text

Exit: as run: 0 complete, 1 failed, 2 invalid input, 3 stopped without
completing, 130 interrupted.
`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--force"], ["--workdir", "--reporter", "--answer", "--answer-file", "--sandbox"]);
  if (!parsed.ok || parsed.args.positionals.length > 1) {
    io.stderr(`phaseloop resume: ${parsed.ok ? "give at most one run id" : parsed.message}\n${USAGE}`);
    return 2;
  }
  const kind = parseReporter(parsed.args.values.get("--reporter"));
  if (!kind) {
    io.stderr(`phaseloop resume: unknown reporter; use auto, tty, plain or json\n`);
    return 2;
  }
  const sandbox = parsed.args.values.get("--sandbox");
  if (sandbox !== undefined && !isSandboxMode(sandbox)) {
    io.stderr(`phaseloop resume: --sandbox needs auto, required or off, got "${sandbox}"\n`);
    return 2;
  }
  const answerText = parsed.args.values.get("--answer");
  const answerFile = parsed.args.values.get("--answer-file");
  if (answerText !== undefined && answerFile !== undefined) {
    io.stderr(`phaseloop resume: give --answer or --answer-file, not both\n`);
    return 2;
  }
  let answer = answerText;
  if (answerFile !== undefined) {
    try {
      answer = hostOf(io).files.readText(resolve(io.cwd, answerFile)).replace(/\r?\n$/, "");
    } catch (error) {
      io.stderr(`phaseloop resume: cannot read --answer-file ${answerFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
      return 2;
    }
  }
  const { signal, dispose } = interruptSignal();
  keepHeapSteady();
  optimizeHotCodeOnly();
  try {
    const outcome = await resumeInForeground({
      runId: parsed.args.positionals[0],
      workdir: resolve(io.cwd, parsed.args.values.get("--workdir") ?? "."),
      force: parsed.args.flags.has("--force"),
      sandbox,
      env: io.env,
      reporter: reporterFactory(kind, io),
      signal,
      answer,
      ask: askerFor(kind, io),
    });
    return await finish(io, outcome, "resume");
  } finally {
    dispose();
  }
}
