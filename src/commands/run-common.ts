import type { SandboxMode } from "../pipeline/spec.ts";
import process from "node:process";
import { createReporter, REPORTER_KINDS, resolveReporterKind, type ReporterKind } from "../reporters/create-reporter.ts";
import type { Asker } from "../run/ask-question.ts";
import { canAskAtTerminal, terminalAsker } from "../run/terminal-asker.ts";
import type { StartOutcome } from "../run/start-run.ts";
import type { CliIo } from "./cli-io.ts";
import { printDiagnostics } from "./print-diagnostics.ts";
import { sourceTexts } from "../pipeline/load-pipeline.ts";

/** Ctrl-C, SIGTERM, SIGHUP: the control layer's way to stop a run (stopRun sends SIGINT). */
export { interruptSignal } from "../control/interrupt-signal.ts";

export function reporterFactory(kind: ReporterKind, io: CliIo) {
  return () =>
    createReporter(kind, {
      stdout: { write: (s: string) => io.stdout(s) },
      stderr: { write: (s: string) => io.stderr(s) },
      isTTY: io.isTTY,
      columns: io.columns,
      color: io.color,
      env: io.env,
      terminal: io.isTTY ? liveTerminal() : undefined,
    });
}

/** The terminal's size as it is now and word of a resize (the view follows it). */
function liveTerminal() {
  const stdout = process.stdout;
  return {
    size: () => ({ columns: stdout.columns || 80, rows: stdout.rows || 24 }),
    onResize(listener: () => void): () => void {
      stdout.on("resize", listener);
      return () => stdout.off("resize", listener);
    },
  };
}

/** The terminal asker, when the run draws the live view on a terminal it can read from; otherwise ask phases wait for `resume --answer`. */
export function askerFor(kind: ReporterKind, io: CliIo): Asker | undefined {
  return canAskAtTerminal(resolveReporterKind(kind, { isTTY: io.isTTY, env: io.env, columns: io.columns }) === "tty") ? terminalAsker() : undefined;
}

export function isSandboxMode(value: string): value is SandboxMode {
  return value === "auto" || value === "required" || value === "off";
}

export function parseReporter(value: string | undefined): ReporterKind | undefined {
  const v = value ?? "auto";
  return (REPORTER_KINDS as readonly string[]).includes(v) ? (v as ReporterKind) : undefined;
}

/** Print what a start or resume ended with; returns the exit code. */
export async function finish(io: CliIo, outcome: StartOutcome, command: string): Promise<number> {
  if ((outcome.kind === "invalid" || outcome.kind === "usage" || outcome.kind === "state") && io.env.GITHUB_ACTIONS === "true") {
    // nothing ran: the job's outputs and log still say why
    const { refusedInGithub } = await import("../reporters/github-actions.ts");
    io.stderr(refusedInGithub(io.env, outcome.kind === "invalid" ? undefined : outcome.kind === "usage" ? outcome.message : outcome.text));
  }
  switch (outcome.kind) {
    case "invalid":
      await printDiagnostics(io, outcome.diagnostics, outcome.loaded ? sourceTexts(outcome.loaded) : {});
      return 2;
    case "usage":
      io.stderr(`phaseloop ${command}: ${outcome.message}\n`);
      return 2;
    case "state":
      io.stderr(outcome.text);
      return 2;
    case "finished":
      io.stderr(`phaseloop ${command}: ${outcome.message}\n`);
      return outcome.exitCode;
    case "ran":
      if (outcome.result.outcome === "awaiting") {
        const a = outcome.result.snapshot.awaiting;
        const phase = a?.kind === "answer" ? a.phase : "?";
        io.stderr(`phaseloop: awaiting answer: phase ${phase} asks a question (phaseloop status ${outcome.runId}); answer with: phaseloop resume ${outcome.runId} --answer "…" (or --answer-file FILE)\n`);
      }
      if (outcome.result.exitCode === 130) io.stderr(`phaseloop: interrupted; resume with: phaseloop resume ${outcome.runId}\n`);
      return outcome.result.exitCode;
    default:
      return 0;
  }
}
