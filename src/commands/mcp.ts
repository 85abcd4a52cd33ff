/**
 * `phaseloop mcp [--workdir DIR]`: phaseloop as an MCP server on stdio, for
 * agents (Claude Code, Codex, Gemini CLI, opencode) to validate pipelines and
 * start, follow, answer, stop and resume runs in one workdir. docs/mcp.md
 * has each client's configuration.
 */
import { resolve } from "node:path";
import { ControlError } from "../control/control-error.ts";
import { resolveWorkdir } from "../control/workdir-path.ts";
import { parseCommandArgs, type CliIo } from "./cli-io.ts";

const USAGE = `Usage: phaseloop mcp [options]

Serves phaseloop to an agent over the Model Context Protocol, on stdin and
stdout: the tools list_recipes, validate_pipeline, start_run, list_runs,
get_run, read_run_log, wait_for_run, answer_question, stop_run and
resume_run, and each run's summary.md as phaseloop://runs/RUN_ID/summary.
Every path and run is in the workdir; the runs it starts go on after it
ends. Each agent's configuration: docs/mcp.md.

Options:
  --workdir DIR   the workdir it serves (default: .)
  -h, --help      this text
`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, [], ["--workdir"]);
  if (!parsed.ok || parsed.args.positionals.length > 0) {
    io.stderr(`phaseloop mcp: ${parsed.ok ? `unexpected argument "${parsed.args.positionals[0]}"` : parsed.message}\n${USAGE}`);
    return 2;
  }
  let workdir: string;
  try {
    workdir = resolveWorkdir(resolve(io.cwd, parsed.args.values.get("--workdir") ?? "."));
  } catch (error) {
    if (!(error instanceof ControlError)) throw error;
    io.stderr(`phaseloop mcp: ${error.message}\n`);
    return 2;
  }
  const { serveStdio } = await import("../mcp-server/serve-stdio.ts");
  await serveStdio({ workdir, env: io.env });
  return 0;
}
