/** Hooks: the hook.run effect, its environment, and whether the machine waits for it. */
import type { HookName } from "../pipeline/spec.ts";
import { contextOf, renderCommand, type Draft } from "./draft.ts";

export function hookEnv(d: Draft, hook: HookName, extra: Record<string, string> = {}): Record<string, string> {
  const s = d.s;
  return {
    PHASELOOP_RUN_ID: s.runId,
    PHASELOOP_PIPELINE: d.m.name,
    PHASELOOP_HOOK: hook,
    PHASELOOP_ITERATION: String(s.iteration),
    PHASELOOP_PHASE: s.awaiting?.kind === "phase" ? s.awaiting.phase : "",
    PHASELOOP_TASK: s.currentTask ?? "",
    PHASELOOP_WORKDIR: s.info.workdir,
    ...extra,
  };
}

/** Emit a hook; returns true when the machine now waits for it. */
export function runHook(d: Draft, hook: HookName, blocking: boolean, then: "iteration" | "next-iteration", extra: Record<string, string> = {}): boolean {
  const h = d.m.hooks[hook];
  if (!h) return false;
  const ctx = contextOf(d);
  const command = renderCommand(d, h.command, ctx);
  if (!command.ok) {
    d.fx.push({ type: "note", level: "warning", message: `hook ${hook} could not be rendered: ${command.error}` });
    return false;
  }
  d.fx.push({ type: "hook.run", hook, command: command.value, timeoutMs: h.timeoutMs, blocking, env: { ...command.env, ...hookEnv(d, hook, extra) } });
  if (blocking) {
    d.s.awaiting = { kind: "hook", hook, then };
    return true;
  }
  return false;
}
