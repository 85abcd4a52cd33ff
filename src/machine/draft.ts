/**
 * The working state of one transition: the draft snapshot it may change and
 * the effects so far, with the helpers every part of the machine reads it by.
 */
import { renderArgv, renderShell, renderTemplate, type JsonValue, type Template } from "../expr/index.ts";
import { asRecord, buildContext } from "./build-context.ts";
import type { CompiledPhase, Effect, Machine, Snapshot } from "./types.ts";

/** Caps that keep the snapshot bounded however long the run. */
export const CAPS = { history: 20, text: 16_000, textTail: 2_000, outputTail: 4_000, outputJson: 8_000, files: 2_000, denied: 20, command: 2_000 } as const;

/** One transition in progress: `s` is a copy the transition owns, `fx` the effects it returns. */
export interface Draft {
  readonly m: Machine;
  readonly s: Snapshot;
  readonly fx: Effect[];
}

export const cap = (text: string, n: number) => (text.length > n ? text.slice(-n) : text);

export function capValue(v: JsonValue): JsonValue {
  const json = JSON.stringify(v);
  return json !== undefined && json.length > CAPS.outputJson ? `${json.slice(0, CAPS.outputJson)}… (truncated)` : v;
}

export function phaseNamed(d: Draft, name: string): CompiledPhase {
  const p = d.m.phases.find((x) => x.name === name);
  if (!p) throw new Error(`unknown phase "${name}"`);
  return p;
}

/** The expression context as the phase (or the run) sees it now. */
export function contextOf(d: Draft, phase?: string): Record<string, JsonValue> {
  return asRecord(buildContext(d.m, d.s, phase));
}

const NUL = "a value holds a NUL byte, which a command line, argument or environment variable cannot carry";

/**
 * Render a template. `shell` and `process` (argv, env, paths) refuse a NUL
 * byte, which no process boundary can carry.
 */
export function renderIn(d: Draft, t: Template | undefined, ctx: Record<string, JsonValue>, mode: "text" | "process" = "text"): { ok: true; value: string } | { ok: false; error: string } {
  if (!t) return { ok: true, value: "" };
  const r = renderTemplate(t, ctx);
  if (!r.ok) return { ok: false, error: r.error };
  if (mode !== "text" && r.value.includes("\0")) return { ok: false, error: NUL };
  return r;
}

/**
 * Render a command: a `sh -c` string or an argv list. Each value of a shell
 * command travels in an environment variable of its own (`env`), which the
 * command refers to; a template that would make a value code is an error.
 */
export function renderCommand(d: Draft, command: { shell: Template } | { argv: Template[] }, ctx: Record<string, JsonValue>): { ok: true; value: string | string[]; env: Record<string, string> } | { ok: false; error: string } {
  if ("shell" in command) {
    const r = renderShell(command.shell, ctx);
    if (!r.ok) return { ok: false, error: r.error };
    if (Object.values(r.env).some((v) => v.includes("\0"))) return { ok: false, error: NUL };
    return { ok: true, value: r.value, env: r.env };
  }
  const r = renderArgv(command.argv, ctx, (t) => renderIn(d, t, ctx, "process"));
  if (!r.ok) return r;
  if (Object.values(r.env).some((v) => v.includes("\0"))) return { ok: false, error: NUL };
  return { ok: true, value: r.argv, env: r.env };
}
