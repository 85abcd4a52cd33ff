/**
 * The hook.run effect: a hook's process, its hook.finished event, and the answer a blocking
 * hook owes the machine. A hook runs in the OS sandbox like a `run` phase (it builds or tests
 * what the agent wrote): what the sandbox refused it is recorded as `sandbox.refused` and,
 * unless `on_refusal: warn`, fails the hook.
 */
import type { Effect, MachineEvent } from "../machine/types.ts";
import { classifyProcess } from "../runtime/classify-failure.ts";
import { openHookFence, type PhaseFence } from "./phase-fence.ts";
import type { RunContext } from "./run-context.ts";
import { ensureArtifacts } from "./run-artifacts.ts";

export async function runHook(e: Extract<Effect, { type: "hook.run" }>, ctx: RunContext): Promise<MachineEvent | undefined> {
  const started = ctx.host.clock.now();
  const env = ctx.env(e.env);
  const spec = ctx.machine.hooks[e.hook];
  let fence: PhaseFence | undefined;
  let fenceError: string | undefined;
  try {
    // the run's artifacts folder, as every phase has it: a hook publishes or checks what the phases left there
    env.PHASELOOP_ARTIFACTS = ensureArtifacts(ctx.info.workdir, ctx.info.run_id, ctx.host.files);
    fence = spec ? await openHookFence(spec, env, ctx, ctx.sandboxFlag, e.command) : undefined;
  } catch (error) {
    fenceError = (error as Error).message;
  }
  let ok: boolean;
  let message: string | null;
  let exitCode: number | null = null;
  if (fenceError !== undefined) {
    ok = false;
    message = fenceError;
  } else {
    let refused: string[] = [];
    try {
      const fenced = fence ? await fence.wrap(e.command, env) : undefined;
      const r = await ctx.host.processes.run({
        command: fenced?.argv ?? e.command,
        cwd: ctx.info.workdir,
        env: fenced ? Object.assign(Object.create(env) as typeof env, fenced.env) : env,
        timeoutMs: e.timeoutMs,
        signal: e.blocking ? ctx.signal : undefined,
      });
      refused = fenced?.done(r.stderrTail) ?? [];
      exitCode = r.exitCode;
      const failure = classifyProcess(r, [0]);
      message = failure ? `${failure.message}${r.stderrTail.trim() ? `: ${r.stderrTail.trim().split("\n").pop()}` : ""}` : null;
      ok = !failure;
    } finally {
      fence?.close();
    }
    if (refused.length > 0) {
      ctx.emit({ type: "sandbox.refused", phase: `hook ${e.hook}`, refused });
      if ((ctx.machine.onRefusal ?? "fail") === "fail") {
        const said = `the OS sandbox refused ${refused.slice(0, 5).join("; ")}${refused.length > 5 ? ` (and ${refused.length - 5} more)` : ""}`;
        ok = false;
        message = message ? `${message}; ${said}` : said;
      }
    }
  }
  ctx.emit({ type: "hook.finished", hook: e.hook, ok, exit_code: exitCode, duration_ms: ctx.host.clock.now() - started, message });
  if (!e.blocking || ctx.interrupted()) return undefined;
  return { type: "hook.finished", at: ctx.host.clock.now(), hook: e.hook, ok, message };
}
