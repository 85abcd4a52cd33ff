import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { resumeInForeground } from "../control/run-in-foreground.ts";
import { parseCommandArgs, type CliIo } from "./cli-io.ts";
import { askerFor, finish, interruptSignal, isSandboxMode, parseReporter, reporterFactory } from "./run-common.ts";
import { optimizeHotCodeOnly } from "../runtime/hot-code-only.ts";
import { keepHeapSteady } from "../runtime/steady-heap.ts";

const USAGE = `Usage: phaseloop resume [RUN_ID] [--answer TEXT | --answer-file FILE] [--force] [--workdir DIR] [--reporter KIND] [--sandbox MODE]

Continues a run from its checkpoint (the latest run by default), re-running
the phase that was in flight. Refuses a pipeline that changed since the run
started unless --force. A state file that cannot be used is reported (exit 2,
nothing changed); --force rebuilds what the event log can rebuild (the
checkpoint, run.json) and skips log lines that cannot be read.

A run that waits for an answer (an ask phase, exit 3) continues with
--answer TEXT, or --answer-file FILE (the file's text, one final newline
dropped).

--sandbox auto|required|off overrides the OS sandbox setting; without it the
run keeps what it started with.
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
      answer = readFileSync(resolve(io.cwd, answerFile), "utf8").replace(/\r?\n$/, "");
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
