/**
 * A phase's run and its result: the phase.run effect with everything rendered
 * (or the failure of a template that did not render), the delay before a
 * retry, and the result recorded in the snapshot. Where control goes after a
 * result is control-flow.ts.
 */
import { usesFunction, type JsonValue, type Template } from "../expr/index.ts";
import { emptyCommand } from "../pipeline/empty-command.ts";
import { cap, CAPS, capValue, renderCommand, renderIn, type Draft } from "./draft.ts";
import type { CompiledPhase, Effect, PhaseResult } from "./types.ts";

type PhaseRunEffect = Extract<Effect, { type: "phase.run" }>;

/** The result of a phase that could not start: a template did not render. */
export function renderFailure(d: Draft, message: string): PhaseResult {
  return { exit_code: null, output: {}, text: "", error: "spawn_error", message, output_tail: message, tokens: 0, cost_usd: 0, duration_ms: 0, changes: d.s.iterationChanges, jitter: 0 };
}

/** The phase.run effect with everything rendered, or why it cannot be rendered. */
export function phaseRunEffect(d: Draft, phase: CompiledPhase, attempt: number, seq: number, ctx: Record<string, JsonValue>): PhaseRunEffect | { error: string } {
  const s = d.s;
  let problem: string | undefined;
  const text = (t: Template | undefined, mode: "text" | "process", where: string) => {
    const r = renderIn(d, t, ctx, mode);
    if (!r.ok) problem ??= `${where}: ${r.error}`;
    return r.ok ? r.value : "";
  };
  // a prompt that reads files (file()) is rendered by the runner, which may read them
  const promptReadsFiles = phase.kind === "agent" && phase.prompt !== undefined && usesFunction(phase.prompt, "file");
  const prompt = phase.kind === "agent" && !promptReadsFiles ? text(phase.prompt, "text", "prompt") : undefined;
  const rendered = phase.run ? renderCommand(d, phase.run, ctx) : undefined;
  if (rendered && !rendered.ok) problem ??= "shell" in phase.run! ? `run: ${rendered.error}` : rendered.error;
  const command = rendered?.ok ? rendered.value : phase.run ? ("shell" in phase.run ? "" : []) : undefined;
  // a command that renders blank would pass without checking anything
  const empty = command !== undefined && problem === undefined ? emptyCommand(command) : undefined;
  if (empty) problem = `run: ${empty.message} once rendered`;
  // a shell command's values, each in a variable of its own (the pipeline's own env wins no name of them)
  const env: Record<string, string> = {};
  for (const [k, t] of Object.entries(d.m.env)) env[k] = text(t, "process", `env.${k}`);
  for (const [k, t] of Object.entries(phase.env)) env[k] = text(t, "process", `env.${k}`);
  if (rendered?.ok) Object.assign(env, rendered.env);
  const outputFiles: Record<string, string> = {};
  for (const [k, t] of Object.entries(phase.outputFiles)) outputFiles[k] = text(t, "process", `output.${k}.file`);
  // a sub-pipeline's params, rendered here; the child converts them to its declared types
  const params: Record<string, string> = {};
  for (const [k, t] of Object.entries(phase.params ?? {})) params[k] = text(t, "text", `params.${k}`);
  if (problem !== undefined) return { error: `cannot render phase "${phase.name}": ${problem}` };
  const session = sessionToContinue(d, phase);
  const kind = phase.kind === "run" ? "run" : phase.kind === "pipeline" ? "pipeline" : "agent";
  return { type: "phase.run", phase: phase.name, kind, iteration: s.iteration, attempt, seq, prompt, ...(promptReadsFiles ? { promptReadsFiles } : {}), command, env, outputFiles, context: ctx, ...(session !== undefined ? { session } : {}), ...(phase.pipeline !== undefined ? { pipeline: phase.pipeline, params } : {}) };
}

/** The session an agent phase continues: its agent's latest, or the one the named phase left (none yet: a fresh one). */
function sessionToContinue(d: Draft, phase: CompiledPhase): string | undefined {
  const left = d.s.sessions;
  if (!phase.session || !left) return undefined;
  return phase.session.continue === "agent" ? left.agents[phase.agent!] : left.phases[phase.session.phase];
}

/** Keep the session a phase's agent reported, for the phases that continue it. */
function keepSession(d: Draft, phase: CompiledPhase, id: string | null | undefined): void {
  if (typeof id !== "string" || id === "" || phase.agent === undefined) return;
  const left = (d.s.sessions ??= { phases: {}, agents: {} });
  left.phases[phase.name] = id;
  left.agents[phase.agent] = id;
}

/** The delay before the next attempt of a failed phase, or null when it is not retried. */
export function retryDelay(phase: CompiledPhase, attempt: number, r: PhaseResult): number | null {
  if (r.error === null || !phase.retry.on.includes(r.error) || attempt >= phase.retry.maxAttempts) return null;
  const base = Math.min(phase.retry.intervalMs * phase.retry.backoff ** (attempt - 1), phase.retry.maxDelayMs);
  return Math.round(phase.retry.jitter ? base / 2 + (Math.min(Math.max(r.jitter, 0), 1) * base) / 2 : base);
}

/** A phase's final result in the snapshot: its context, this iteration's record, the last failure and the breakers' counts. */
export function recordResult(d: Draft, phase: CompiledPhase, attempt: number, r: PhaseResult): void {
  const s = d.s;
  const name = phase.name;
  const failed = r.error !== null;
  keepSession(d, phase, r.session_id);
  s.results[name] = {
    status: failed ? "failed" : "succeeded",
    exit_code: r.exit_code,
    output: r.output,
    text: cap(r.text, CAPS.text),
    error: r.error,
    attempts: attempt,
    duration_ms: r.duration_ms,
    tokens: r.tokens,
    cost_usd: r.cost_usd,
    iteration: s.iteration,
    message: failed ? cap(r.message ?? r.error!, CAPS.textTail) : null,
    denied: (r.denied ?? []).slice(0, CAPS.denied),
    ...(phase.kind === "ask" ? { answer: r.answer === null || r.answer === undefined ? null : cap(r.answer, CAPS.text) } : {}),
  };
  const output: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(r.output)) output[k] = capValue(v);
  s.iterationPhases[name] = {
    status: failed ? "failed" : "succeeded", error: r.error, exit_code: r.exit_code, output, text_tail: cap(r.text, CAPS.textTail),
    message: failed ? cap(r.message ?? r.error!, CAPS.textTail) : null,
    command: r.command ? cap(r.command, CAPS.command) : null,
    commands: (r.commands ?? []).slice(-CAPS.denied),
    denied: (r.denied ?? []).slice(0, CAPS.denied),
  };
  if (phase.kind === "group") return; // its members counted for themselves
  if (failed) {
    s.lastFailure = { phase: name, iteration: s.iteration, error: r.error!, exit_code: r.exit_code, output_tail: cap(r.output_tail, CAPS.outputTail), message: r.message ?? r.error! };
    if (r.error !== "transient") {
      s.counters.consecutiveFailures += 1;
      s.counters.phaseFailures[name] = (s.counters.phaseFailures[name] ?? 0) + 1;
    }
  } else {
    s.counters.consecutiveFailures = 0;
    s.counters.phaseFailures[name] = 0;
  }
}

