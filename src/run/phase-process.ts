/**
 * A phase's process: the invocation run in the workdir under the phase's
 * timeouts, its output logged to stdout.log and stderr.log, its stdout fed to
 * the agent's parser, its lines reported live as fast as they can be shown.
 */
import { join } from "node:path";
import type { AgentRunReport } from "../agents/agent-adapter.ts";
import type { CompiledPhase } from "../machine/types.ts";
import { runProcess, type ProcessResult } from "../runtime/run-process.ts";
import { LiveOutput } from "./live-output.ts";
import type { PhaseInvocation, PhaseRunEffect } from "./phase-invocation.ts";
import type { RunContext } from "./run-context.ts";

/** What carrying out a phase produced, whatever ran it: the process and what the agent reported. */
export interface PhaseExecution {
  process: ProcessResult;
  report: AgentRunReport;
}

export async function runPhaseProcess(e: PhaseRunEffect, phase: CompiledPhase, inv: PhaseInvocation, dir: string, ctx: RunContext): Promise<PhaseExecution> {
  const { parser } = inv;
  const live = new LiveOutput(ctx.emit, e.phase);
  const r = await runProcess({
    command: inv.command,
    cwd: ctx.info.workdir,
    env: inv.env,
    stdin: inv.stdin,
    timeoutMs: phase.timeoutMs,
    idleTimeoutMs: phase.idleTimeoutMs ?? undefined,
    signal: ctx.signal,
    stdoutFile: join(dir, "stdout.log"),
    stderrFile: join(dir, "stderr.log"),
    onLine: (stream, line) => {
      if (stream === "stdout") parser.push(line);
      live.push(stream, line);
    },
  });
  live.end();
  return { process: r, report: parser.finish(r.stdout) };
}
