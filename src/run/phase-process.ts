/**
 * A phase's process: the invocation run in the workdir under the phase's
 * timeouts, its output logged to stdout.log and stderr.log, its stdout fed to
 * the agent's parser, its lines reported live as fast as they can be shown
 * (a structured agent's as the human lines its parser makes of them). A CLI
 * that printed its terminal result gets a short grace, then it is ended; when
 * the phase ends, every process carrying its run id and phase directory is
 * gone, those that left the process group too.
 */
import { join } from "node:path";
import type { AgentRunReport } from "../agents/agent-adapter.ts";
import type { CompiledPhase } from "../machine/types.ts";
import type { ProcessResult } from "../host/run-process.ts";
import { LiveOutput } from "./live-output.ts";
import type { PhaseFence } from "./phase-fence.ts";
import type { PhaseInvocation, PhaseRunEffect } from "./phase-invocation.ts";
import type { RunContext } from "./run-context.ts";

/** What carrying out a phase produced, whatever ran it: the process and what the agent reported. */
export interface PhaseExecution {
  process: ProcessResult;
  report: AgentRunReport;
}

/** How long an agent CLI may run on after its terminal result (a background task it waits for). */
export const RESULT_GRACE_MS = 2000;

export async function runPhaseProcess(e: PhaseRunEffect, phase: CompiledPhase, inv: PhaseInvocation, dir: string, ctx: RunContext, fence?: PhaseFence): Promise<PhaseExecution> {
  const { parser } = inv;
  const fenced = fence ? await fence.wrap(inv.command, inv.env) : undefined;
  const live = new LiveOutput(ctx.emit, e.phase, ctx.host.clock);
  const runId = inv.env.PHASELOOP_RUN_ID;
  const phaseDir = inv.env.PHASELOOP_PHASE_DIR;
  const started = ctx.host.clock.now();
  const r = await ctx.host.processes.run({
    command: fenced?.argv ?? inv.command,
    cwd: ctx.info.workdir,
    env: fenced ? Object.assign(Object.create(inv.env) as typeof inv.env, fenced.env) : inv.env,
    stdin: inv.stdin,
    timeoutMs: phase.timeoutMs,
    idleTimeoutMs: phase.idleTimeoutMs ?? undefined,
    signal: ctx.signal,
    stdoutFile: join(dir, "stdout.log"),
    stderrFile: join(dir, "stderr.log"),
    resultGraceMs: RESULT_GRACE_MS,
    // the phase's processes, looked for at its end; none is left of a phase in the fence's own PID namespace
    phase: runId && phaseDir ? { runId, phaseDir, contained: fenced?.contained } : undefined,
    onLine: (stream, line) => {
      if (stream === "stderr") {
        const info = parser.pushStderr?.(line);
        if (info?.display) for (const l of info.display) live.push(stream, l);
        else live.push(stream, line);
        return;
      }
      const info = parser.push(line);
      if (info?.display) for (const l of info.display) live.push(stream, l);
      else live.push(stream, line);
      return info?.terminal ? "result" : undefined;
    },
  });
  live.end();
  // a structured agent's tools report what their commands met in its event stream
  fenced?.done(r.stderrTail, phase.kind === "agent" ? r.stdout : "");
  return { process: r, report: parser.finish(r.stdout, r.exitCode) };
}
