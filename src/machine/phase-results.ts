/**
 * Phases: entering one (its `when`), the phase.run effect with everything
 * rendered, and what a result does: retries, the recorded result, the rule
 * that chooses where control goes, then the stop checks in their precedence.
 */
import { collectReferences, evaluateExpression, isTruthy, usesFunction, type Expr, type JsonValue, type Template } from "../expr/index.ts";
import { emptyCommand } from "../pipeline/empty-command.ts";
import { pendingPhase } from "./build-context.ts";
import { cap, CAPS, capValue, contextOf, phaseNamed, renderCommand, renderIn, type Draft } from "./draft.ts";
import { nextIteration } from "./iteration.ts";
import { checkBudgetAndDuration, checkStopRules, stop } from "./stop-logic.ts";
import { gateFinished, markTask } from "./task-queue.ts";
import { startGroup } from "./parallel-group.ts";
import { nextOutsideGroups } from "./machine-graph.ts";
import type { CompiledPhase, Effect, PhaseResult } from "./types.ts";

type PhaseRunEffect = Extract<Effect, { type: "phase.run" }>;

/** Enter a phase, skipping those whose `when` does not hold. */
export function enterPhase(d: Draft, name: string): void {
  let phase = phaseNamed(d, name);
  for (let hops = 0; hops <= 2 * d.m.phases.length; hops++) {
    const visit = countVisit(d, phase);
    if (visit === "head") return nextIteration(d);
    if (visit === "stopped") return;
    if (visit !== phase) {
      phase = visit;
      continue;
    }
    if (!phase.when) return runPhase(d, phase, 1);
    const r = evaluateExpression(phase.when, contextOf(d));
    if (r.ok && isTruthy(r.value)) return runPhase(d, phase, 1);
    const reason = r.ok ? `when: ${phase.whenText} is false` : `when: ${phase.whenText} could not be evaluated (${r.error})`;
    d.fx.push({ type: "phase.skipped", phase: phase.name, iteration: d.s.iteration, reason });
    d.s.results[phase.name] = { ...(d.s.results[phase.name] ?? pendingPhase()), status: "skipped", iteration: d.s.iteration };
    d.s.iterationPhases[phase.name] = { status: "skipped", error: null, exit_code: null, output: {}, text_tail: "" };
    const next = nextInOrder(d, phase);
    if (!next) return nextIteration(d);
    phase = next;
  }
  // every phase on the way was exhausted or skipped: nothing can run in this iteration
  stop(d, "blocked", { code: "max_visits", message: `no phase can be entered: every way from "${name}" is exhausted` });
}

/**
 * Count an entry into `phase` against its `max_visits`. Returns the phase to
 * enter (itself), or where its `exhausted` rule leads: another phase, the
 * loop head (the next iteration), or a stop.
 */
function countVisit(d: Draft, phase: CompiledPhase): CompiledPhase | "head" | "stopped" {
  if (phase.maxVisits === null) return phase;
  const visits = (d.s.visits ??= {});
  const n = visits[phase.name] ?? 0;
  if (n < phase.maxVisits) {
    visits[phase.name] = n + 1;
    return phase;
  }
  const rule = phase.exhausted!;
  const ctx = contextOf(d, phase.name);
  const fallback = `phase "${phase.name}" reached max_visits (${phase.maxVisits}) in iteration ${d.s.iteration}`;
  const rr = rule.reason ? renderIn(d, rule.reason, ctx) : undefined;
  const reason = rr?.ok && rr.value.trim() !== "" ? rr.value : fallback;
  d.fx.push({ type: "phase.exhausted", phase: phase.name, iteration: d.s.iteration, visits: n, reason, ...(rule.goto ? { goto: rule.goto } : { stop: rule.stop! }) });
  if (rule.stop) {
    stop(d, rule.stop, { code: "max_visits", message: reason });
    return "stopped";
  }
  if (rule.goto === d.m.head) return "head";
  return phaseNamed(d, rule.goto!);
}

export function runPhase(d: Draft, phase: CompiledPhase, attempt: number): void {
  const s = d.s;
  if (phase.kind === "group") return startGroup(d, phase);
  s.phaseSeq += 1;
  s.status = "running";
  s.awaiting = { kind: "phase", phase: phase.name, attempt, seq: s.phaseSeq };
  const ctx = contextOf(d);
  if (phase.kind === "ask") return askQuestion(d, phase, ctx);
  const run = phaseRunEffect(d, phase, attempt, s.phaseSeq, ctx);
  if ("error" in run) {
    d.fx.push({ type: "phase.error", phase: phase.name, iteration: s.iteration, message: run.error });
    phaseFinished(d, phase.name, attempt, renderFailure(d, run.error));
    return;
  }
  d.fx.push(run);
}

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

/** An ask phase: the question is asked, and the machine waits for answer.given. */
function askQuestion(d: Draft, phase: CompiledPhase, ctx: Record<string, JsonValue>): void {
  const s = d.s;
  const r = renderIn(d, phase.ask, ctx);
  if (!r.ok) {
    const message = `cannot render phase "${phase.name}": ask: ${r.error}`;
    d.fx.push({ type: "phase.error", phase: phase.name, iteration: s.iteration, message });
    return phaseFinished(d, phase.name, 1, renderFailure(d, message));
  }
  s.status = "waiting";
  s.awaiting = { kind: "answer", phase: phase.name, question: r.value, seq: s.phaseSeq, ...(s.lastAt !== null ? { askedAt: s.lastAt } : {}) };
  const questions = [...(s.questions ?? []), { phase: phase.name, iteration: s.iteration, question: cap(r.value, CAPS.textTail), answer: null }];
  s.questions = questions.slice(-CAPS.history);
  d.fx.push({ type: "question.ask", phase: phase.name, iteration: s.iteration, seq: s.phaseSeq, question: r.value, timeoutMs: phase.timeoutMs });
}

/** The answer (or its timeout) is the ask phase's result. */
export function answerGiven(d: Draft, name: string, answer: string | null, waitedMs: number): void {
  d.s.status = "running";
  const timedOut = answer === null;
  const asked = d.s.questions?.at(-1);
  if (asked && asked.phase === name && asked.answer === null) asked.answer = timedOut ? "(no answer: timed out)" : cap(answer, CAPS.textTail);
  const message = timedOut ? "no answer within the timeout" : null;
  phaseFinished(d, name, 1, {
    exit_code: null, output: {}, text: answer ?? "", answer, error: timedOut ? "timeout" : null, message, output_tail: message ?? "", tokens: 0, cost_usd: 0, duration_ms: waitedMs, changes: d.s.iterationChanges, jitter: 0,
  });
}

export function phaseFinished(d: Draft, name: string, attempt: number, r: PhaseResult): void {
  const s = d.s;
  const phase = phaseNamed(d, name);
  s.awaiting = null;
  s.tokens += r.tokens;
  s.costUsd += r.cost_usd;
  s.counters.phasesRun += 1;
  s.iterationChanges = [...r.changes];
  const failed = r.error !== null;
  // a phase that broke its tool set decides nothing: its outputs are not read
  const violated = r.error === "policy_violation";
  if (violated) r = { ...r, output: {} };

  const ms = retryDelay(phase, attempt, r);
  if (ms !== null) {
    // limits that do not wait for the phase still apply while retrying
    if (checkBudgetAndDuration(d)) return;
    s.counters.retries += 1;
    s.status = "waiting";
    s.awaiting = { kind: "retry", phase: name, attempt: attempt + 1, delayMs: ms };
    d.fx.push({ type: "wait", ms, phase: name, attempt: attempt + 1, error: r.error!, message: r.message ?? null });
    return;
  }
  recordResult(d, phase, attempt, r);
  if (s.gateRunning && d.m.tasks?.finalGate === name) return gateFinished(d, !failed, r);
  decide(d, phase, r, violated);
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

/** After a phase's result: the rule that chooses where control goes, then the stop checks in their precedence. */
export function decide(d: Draft, phase: CompiledPhase, r: PhaseResult, violated: boolean): void {
  const s = d.s;
  const name = phase.name;
  // where control goes: the first rule whose `if` holds
  const ctx = contextOf(d, name);
  let chosen: (typeof phase.rules)[number] | undefined;
  for (const rule of phase.rules) {
    // after a policy violation only the rules written for a failure may apply
    if (violated && !(rule.if && testsFailure(rule.if, name))) continue;
    if (!rule.if) {
      chosen = rule;
      break;
    }
    const v = evaluateExpression(rule.if, ctx);
    if (!v.ok) {
      d.fx.push({ type: "note", level: "warning", message: `phase "${name}": rule "${rule.ifText}" could not be evaluated (${v.error}); it does not apply` });
      continue;
    }
    if (isTruthy(v.value)) {
      chosen = rule;
      break;
    }
  }
  const reasonText = (fallback: string) => {
    if (!chosen?.reason) return fallback;
    const rr = renderIn(d, chosen.reason, ctx);
    return rr.ok && rr.value.trim() !== "" ? rr.value : fallback;
  };
  noteFailure(d, phase, r, chosen?.if !== undefined ? failuresTested(chosen.if, name) : new Set());
  if (chosen?.task) markTask(d, chosen.task, reasonText(`marked ${chosen.task} by phase "${name}"`));
  else if (chosen?.reason && !chosen.stop) {
    // a reason on a rule that goes on: why this attempt did not finish the current task
    const current = s.tasks?.find((t) => t.id === s.currentTask && t.status === "pending");
    const text = reasonText("");
    if (current && text) current.rejection = text;
  }

  if (violated && !chosen) {
    // the attempt at the current task did not count, and control does not go where the phase would lead
    const current = s.tasks?.find((t) => t.id === s.currentTask && t.status === "pending");
    if (current) current.rejection = `phase "${name}" broke its tool set: ${r.message ?? "policy_violation"}`;
  }

  // 1. an explicit stop from the phase's own rule
  if (chosen?.stop) {
    return stop(d, chosen.stop, { code: "transition", message: reasonText(`phase "${name}" ended the run: ${chosen.stop}${chosen.ifText ? ` (${chosen.ifText})` : ""}`) });
  }
  // 2. stop.when rules
  if (checkStopRules(d)) return;
  // 3. budgets and max_duration
  if (checkBudgetAndDuration(d)) return;
  // 4. breakers
  const cf = s.limits.consecutiveFailures;
  if (cf !== null && cf > 0 && s.counters.consecutiveFailures >= cf) {
    return stop(d, "stopped", { code: "consecutive_failures", message: `${s.counters.consecutiveFailures} phases failed in a row (consecutive_failures: ${cf}); last: ${s.lastFailure?.message ?? "?"}` });
  }
  const pf = phase.consecutiveFailures;
  if (pf !== null && (s.counters.phaseFailures[name] ?? 0) >= pf) {
    return stop(d, "stopped", { code: "phase_failures", message: `phase "${name}" failed ${pf} time${pf === 1 ? "" : "s"} in a row; last: ${s.lastFailure?.message ?? "?"}` });
  }
  // 5. go on: an explicit goto, or fall through in file order
  const target = chosen?.goto ?? (violated ? d.m.head : (nextInOrder(d, phase)?.name ?? d.m.head));
  if (target === d.m.head) return nextIteration(d);
  enterPhase(d, target);
}

/**
 * A failure that a later `stop: complete` must not pass over: an agent, a
 * sub-pipeline or a group that failed, or a required output missing or
 * invalid (any phase). A command phase's other failures are its verdict (a
 * check that exits 1), which its rules read.
 */
function mustBeHandled(phase: CompiledPhase, r: PhaseResult): boolean {
  if (r.error === null) return false;
  return r.error === "output_invalid" || phase.kind === "agent" || phase.kind === "pipeline" || phase.kind === "group";
}

/**
 * Keep or clear the standing failures after a phase's rule was chosen: the
 * phase's own (it stands when it must be handled and the rule does not test
 * it), and those of the phases the rule tests (`tested`: handled now).
 */
function noteFailure(d: Draft, phase: CompiledPhase, r: PhaseResult, tested: Set<string>): void {
  const s = d.s;
  const others = (s.unhandled ?? []).filter((u) => u.phase !== phase.name && !tested.has(u.phase));
  if (mustBeHandled(phase, r) && !tested.has(phase.name)) others.push({ phase: phase.name, error: r.error!, message: cap(r.message ?? r.error!, CAPS.textTail) });
  if (others.length > 0) s.unhandled = others;
  else delete s.unhandled;
}

/** The phases whose `status` or `error` a condition tests: `status`, `error` (the phase's own), `phases.NAME.status|error`. */
function failuresTested(expr: Expr, name: string): Set<string> {
  const out = new Set<string>();
  for (const { path } of collectReferences(expr)) {
    if (path[0] === "error" || path[0] === "status") out.add(name);
    else if (path[0] === "phases" && typeof path[1] === "string" && (path[2] === "error" || path[2] === "status")) out.add(path[1]);
  }
  return out;
}

/** The phase after this one in file order, past the members of parallel groups (they run only with their group). */
export function nextInOrder(d: Draft, phase: CompiledPhase): CompiledPhase | undefined {
  return nextOutsideGroups(d.m, phase.index);
}

/** Whether a rule's condition looks at the phase's failure (`error`, `status`, or `phases.NAME.error|status`). */
function testsFailure(expr: Expr, name: string): boolean {
  return collectReferences(expr).some(({ path }) => path[0] === "error" || path[0] === "status" || (path[0] === "phases" && path[1] === name && (path[2] === "error" || path[2] === "status")));
}
