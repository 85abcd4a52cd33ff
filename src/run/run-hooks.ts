/** The hook.run effect: a hook's process, its hook.finished event, and the answer a blocking hook owes the machine. */
import type { Effect, MachineEvent } from "../machine/types.ts";
import { classifyProcess } from "../runtime/classify-failure.ts";
import { runProcess } from "../runtime/run-process.ts";
import type { RunContext } from "./run-context.ts";

export async function runHook(e: Extract<Effect, { type: "hook.run" }>, ctx: RunContext): Promise<MachineEvent | undefined> {
  const started = Date.now();
  const r = await runProcess({
    command: e.command,
    cwd: ctx.info.workdir,
    env: ctx.env(e.env),
    timeoutMs: e.timeoutMs,
    signal: e.blocking ? ctx.signal : undefined,
  });
  const failure = classifyProcess(r, [0]);
  const message = failure ? `${failure.message}${r.stderrTail.trim() ? `: ${r.stderrTail.trim().split("\n").pop()}` : ""}` : null;
  ctx.emit({ type: "hook.finished", hook: e.hook, ok: !failure, exit_code: r.exitCode, duration_ms: Date.now() - started, message });
  if (!e.blocking || ctx.interrupted()) return undefined;
  return { type: "hook.finished", at: Date.now(), hook: e.hook, ok: !failure, message };
}
