#!/usr/bin/env node
/**
 * The phaseloop command line: a thin entry that handles --help and --version
 * itself and imports each command only when it is asked for, so startup stays
 * close to the runtime's own.
 */
import { Buffer } from "node:buffer";
import process from "node:process";
import { nodeFiles } from "./host/node-files.ts";
import { VERSION } from "./generated/version.ts";
import type { CliIo, CommandMain } from "./commands/cli-io.ts";

const COMMANDS: Record<string, { summary: string; load: () => Promise<{ main: CommandMain }> }> = {
  run: { summary: "run a pipeline", load: () => import("./commands/run.ts") },
  resume: { summary: "continue an interrupted run from its checkpoint", load: () => import("./commands/resume.ts") },
  status: { summary: "show where a run stands", load: () => import("./commands/status.ts") },
  runs: { summary: "list the runs of a workdir, newest first", load: () => import("./commands/runs.ts") },
  logs: { summary: "show a run's event log", load: () => import("./commands/logs.ts") },
  tasks: { summary: "list a pipeline's task queue (--ready: what can start now)", load: () => import("./commands/tasks.ts") },
  validate: { summary: "check pipelines and report every problem", load: () => import("./commands/validate.ts") },
  graph: { summary: "draw a pipeline's state machine (Mermaid or DOT)", load: () => import("./commands/graph.ts") },
  migrate: { summary: "write the fixes of format 1's newer warnings into a pipeline", load: () => import("./commands/migrate.ts") },
  init: { summary: "copy a recipe into a repository", load: () => import("./commands/init.ts") },
  recipes: { summary: "list the recipes", load: () => import("./commands/recipes.ts") },
  schema: { summary: "print the pipeline JSON Schema", load: () => import("./commands/schema.ts") },
  ui: { summary: "a live page of the workdir's runs, on loopback, with a token", load: () => import("./commands/ui.ts") },
  report: { summary: "a run's page as one self-contained HTML file", load: () => import("./commands/report.ts") },
  mcp: { summary: "serve phaseloop to agents over MCP (stdio)", load: () => import("./commands/mcp.ts") },
};

const HELP = `phaseloop ${VERSION}: agentic coding loops from versioned YAML pipelines

Usage:
  phaseloop run PIPELINE [--param k=v]... [--workdir DIR] [--max-iterations N]
                [--parallel N] [--into BRANCH] [--task ID]
                [--reporter auto|tty|plain|json] [--sandbox auto|required|off]
                [--dry-run [--json]]
  phaseloop resume [RUN_ID] [--force] [--answer TEXT | --answer-file F]
                [--workdir DIR] [--reporter auto|tty|plain|json]
                [--sandbox auto|required|off]
  phaseloop status [RUN_ID] [--json] [--workdir DIR]
  phaseloop runs [--json] [--workdir DIR]
  phaseloop logs [RUN_ID] [--follow] [--json] [--workdir DIR]
  phaseloop tasks PIPELINE [--ready] [--json] [--workdir DIR]
  phaseloop validate PIPELINE... [--json] [--print]
  phaseloop graph PIPELINE [--format mermaid|dot] [--expand]
  phaseloop migrate PIPELINE [--write]
  phaseloop init [[PACKAGE/]RECIPE] [--extends [PACKAGE/]RECIPE] [--dir DIR]
                [--force]
  phaseloop recipes [--json]
  phaseloop schema
  phaseloop ui [--workdir DIR] [--port N] [--host H] [--open]
  phaseloop report [RUN_ID] --html [-o FILE] [--workdir DIR]
  phaseloop mcp [--workdir DIR]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(10)}${c.summary}`)
  .join("\n")}

Every command: --help (its options), --no-color. phaseloop --version.

Exit codes: 0 complete, 1 failed, 2 invalid input or usage, 3 stopped without
completing (blocked, limit, breaker, budget), 130 interrupted (resumable).

Docs: README.md and docs/ in the package (format.md, expressions.md,
stop-logic.md, agents.md, events.md, diagnostics.md, recipes.md, ci.md, ui.md,
mcp.md).
`;

function ignoreEpipe(stream: NodeJS.WriteStream): void {
  // piping into `head` closes the pipe early: stop writing quietly. A closed
  // terminal (EIO) leaves nothing to write to: the run goes on to its checkpoint
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    if (error.code === "EIO" || error.code === "ERR_STREAM_DESTROYED") return;
    throw error;
  });
}

/**
 * A writer for the CLI's own output: straight to the file descriptor, which
 * spares short commands the cost of setting up `process.stdout` (a few
 * milliseconds of a `validate`). A closed pipe ends the program quietly; a
 * descriptor that would block hands the rest to the stream.
 */
function fdWriter(fd: 1 | 2, stream: () => NodeJS.WriteStream): (text: string) => void {
  let direct = true;
  let closed = false;
  return (text) => {
    if (closed) return;
    if (direct) {
      const bytes = Buffer.from(text);
      let offset = 0;
      try {
        while (offset < bytes.length) offset += nodeFiles.writeDescriptor(fd, bytes, offset);
        return;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EPIPE") process.exit(process.exitCode ?? 0);
        if (code === "EIO") {
          closed = true; // the terminal is gone
          return;
        }
        if (code !== "EAGAIN") throw error;
        direct = false;
        text = bytes.subarray(offset).toString();
      }
    }
    stream().write(text);
  };
}

function makeIo(): CliIo {
  const env = process.env as Record<string, string | undefined>;
  const noColor = env.NO_COLOR !== undefined && env.NO_COLOR !== "";
  let isTTY: boolean | undefined;
  const stdoutIsTTY = () => (isTTY ??= Boolean(process.stdout.isTTY));
  return {
    stdout: fdWriter(1, () => process.stdout),
    stderr: fdWriter(2, () => process.stderr),
    // read when a command needs them: asking sets up process.stdout
    get isTTY() {
      return stdoutIsTTY();
    },
    get columns() {
      return stdoutIsTTY() ? (process.stdout.columns ?? 0) : undefined;
    },
    get color() {
      return stdoutIsTTY() && !noColor && env.TERM !== "dumb" && !process.argv.includes("--no-color");
    },
    env,
    cwd: process.cwd(),
  };
}

/** Commands that write only through the CLI's own writers, which handle a closed pipe themselves. */
const DIRECT_OUTPUT = new Set(["validate", "schema"]);

async function main(argv: string[]): Promise<number> {
  const io = makeIo();
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    if (first === "help" && rest[0] && COMMANDS[rest[0]]) return (await COMMANDS[rest[0]]!.load()).main(["--help"], io);
    io.stdout(HELP);
    return first === undefined ? 2 : 0;
  }
  if (first === "--version" || first === "-V" || first === "version") {
    io.stdout(`${VERSION}\n`);
    return 0;
  }
  const command = COMMANDS[first];
  if (command && !DIRECT_OUTPUT.has(first)) {
    // reporters and listr2 write to the streams themselves
    ignoreEpipe(process.stdout);
    ignoreEpipe(process.stderr);
  }
  if (!command) {
    const { didYouMean } = await import("./diagnostics/did-you-mean.ts");
    const hint = first.startsWith("-") ? undefined : didYouMean(first, Object.keys(COMMANDS));
    io.stderr(`phaseloop: ${first.startsWith("-") ? `unknown option "${first}"` : `unknown command "${first}"`}${hint ? ` (${hint})` : ""}\nRun "phaseloop --help" for usage.\n`);
    return 2;
  }
  let mod: { main: CommandMain };
  try {
    mod = await command.load();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ERR_MODULE_NOT_FOUND" || /Module not found|Cannot find module/.test(String(error))) {
      io.stderr(`phaseloop: command "${first}" is not available in this build\n`);
      return 2;
    }
    throw error;
  }
  return mod.main(rest.filter((a) => a !== "--no-color"), io);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`phaseloop: internal error (INTERNAL): ${error instanceof Error ? error.message : String(error)}\n`);
    if (process.env.PHASELOOP_DEBUG) process.stderr.write(`${(error as Error)?.stack ?? ""}\n`);
    process.exitCode = 1;
  },
);
