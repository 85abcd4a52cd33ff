import { resolve } from "node:path";
import { resumeRun } from "../run/resume-run.ts";
import { parseCommandArgs, type CliIo } from "./cli-io.ts";
import { finish, interruptSignal, isSandboxMode, parseReporter, reporterFactory } from "./run-common.ts";
import { keepHeapSteady } from "../runtime/steady-heap.ts";

const USAGE = `Usage: phaseloop resume [RUN_ID] [--force] [--workdir DIR] [--reporter KIND] [--sandbox MODE]

Continues a run from its checkpoint (the latest run by default), re-running
the phase that was in flight. Refuses a pipeline that changed since the run
started unless --force. A state file that cannot be used is reported (exit 2,
nothing changed); --force rebuilds what the event log can rebuild (the
checkpoint, run.json) and skips log lines that cannot be read.
--sandbox auto|required|off overrides the OS sandbox setting; without it the
run keeps what it started with.
`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--force"], ["--workdir", "--reporter", "--sandbox"]);
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
  const { signal, dispose } = interruptSignal();
  keepHeapSteady();
  try {
    const outcome = await resumeRun({
      runId: parsed.args.positionals[0],
      workdir: resolve(io.cwd, parsed.args.values.get("--workdir") ?? "."),
      force: parsed.args.flags.has("--force"),
      sandbox,
      env: io.env,
      reporter: reporterFactory(kind, io),
      signal,
    });
    return await finish(io, outcome, "resume");
  } finally {
    dispose();
  }
}
