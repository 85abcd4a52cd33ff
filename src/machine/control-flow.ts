/**
 * Where control goes: an iteration begins (the next task, the iteration
 * limit, the before_iteration hook), a phase is entered (its `when`, its
 * visits), run, and its result decides the next step (retries, the rule
 * that chooses where control goes, then the stop checks in their
 * precedence); the loop head ends the iteration and begins the next; the
 * final gate ends a task queue. These steps lead into one another, so they
 * live together; what they record and render is in the files below them
 * (phase-results.ts, iteration.ts, task-queue.ts, parallel-group.ts,
 * stop-logic.ts, hooks.ts).
 */
import { collectReferences, evaluateExpression, isTruthy, type Expr, type JsonValue } from "../expr/index.ts";
import { pendingPhase } from "./build-context.ts";
import { cap, CAPS, contextOf, phaseNamed, renderIn, type Draft } from "./draft.ts";
import { runHook } from "./hooks.ts";
import { endIteration, stopLimit } from "./iteration.ts";
import { nextOutsideGroups } from "./machine-graph.ts";
import { startGroup, type GroupEnd } from "./parallel-group.ts";
import { phaseRunEffect, recordResult, renderFailure, retryDelay } from "./phase-results.ts";
import { checkBudgetAndDuration, checkStopRules, stop } from "./stop-logic.ts";
import { markTask, onlyTask, queue } from "./task-queue.ts";
import type { CompiledPhase, PhaseResult } from "./types.ts";

export function beginIteration(d: Draft): void {
  const s = d.s;
  if (d.m.tasks && s.tasks) {
    const q = queue(d);
    if (q.kind === "all-done") return allTasksDone(d);
    if (q.kind === "blocked") return stop(d, "blocked", { code: "tasks_blocked", message: q.message });
    if (s.iteration >= s.limits.maxIterations) return stopLimit(d);
    s.currentTask = q.task;
  } else if (s.iteration >= s.limits.maxIterations) return stopLimit(d);
  s.iteration += 1;
  s.iterationPhases = {};
  s.iterationChanges = [];
  delete s.unhandled; // a new iteration's work is judged on its own
  s.visits = {};
  s.iterationOpen = true;
  d.fx.push({ type: "iteration.begin", iteration: s.iteration, task: s.currentTask });
  if (d.m.hooks.before_iteration && runHook(d, "before_iteration", d.m.hooks.before_iteration.onFailure === "block", "iteration")) return;
  enterPhase(d, d.m.head);
}

/** Control enters the loop head: the iteration ends and the next begins. */
export function nextIteration(d: Draft): void {
  // the iteration that finished the last task also runs the final gate
  const gate = d.m.tasks?.finalGate;
  if (gate && d.s.tasks && d.s.iterationOpen && !d.s.gateRunning && queue(d).kind === "all-done") {
    d.s.gateRunning = true;
    d.s.currentTask = null; // the gate checks the whole, not one task
    return runPhase(d, phaseNamed(d, gate), 1);
  }
  if (endIteration(d)) return;
  if (d.m.hooks.after_iteration && runHook(d, "after_iteration", d.m.hooks.after_iteration.onFailure === "block", "next-iteration")) return;
  beginIteration(d);
}

export function allTasksDone(d: Draft): void {
  const gate = d.m.tasks?.finalGate;
  const only = onlyTask(d);
  if (!gate) return stop(d, "complete", { code: "tasks_done", message: only !== undefined ? `task ${only} is done` : `all ${d.s.tasks!.length} tasks are done` });
  if (!d.s.iterationOpen) {
    // the gate runs within an iteration: the one that finished the last task, or a new one
    if (d.s.iteration >= d.s.limits.maxIterations) return stopLimit(d);
    d.s.iteration += 1;
    d.s.iterationPhases = {};
    d.s.iterationChanges = [];
    d.s.iterationOpen = true;
    d.fx.push({ type: "iteration.begin", iteration: d.s.iteration, task: null });
  }
  d.s.gateRunning = true;
  runPhase(d, phaseNamed(d, gate), 1);
}

export function gateFinished(d: Draft, passed: boolean, r: PhaseResult): void {
  const s = d.s;
  s.gateRunning = false;
  if (passed) return stop(d, "complete", { code: "tasks_done", message: `all ${s.tasks!.length} tasks are done and the final gate "${d.m.tasks!.finalGate}" passed` });
  const reopen = s.tasks!.find((t) => t.id === s.lastDoneTask) ?? [...s.tasks!].reverse().find((t) => t.status === "done");
  if (reopen) {
    reopen.status = "pending";
    reopen.notes = [...reopen.notes, `[REOPENED] the final gate failed: ${r.message ?? r.error ?? "failed"}`];
    d.fx.push({ type: "task.update", task: reopen.id, status: "pending", attempts: reopen.attempts, reason: "the final gate failed" });
    d.fx.push({ type: "note", level: "warning", message: `the final gate failed; task ${reopen.id} is reopened` });
  } else {
    return stop(d, "failed", { code: "transition", message: `the final gate "${d.m.tasks!.finalGate}" failed and there is no task to reopen` });
  }
  // the gate's failure counts toward the breakers like any phase
  const cf = s.limits.consecutiveFailures;
  if (cf !== null && cf > 0 && s.counters.consecutiveFailures >= cf) {
    return stop(d, "stopped", { code: "consecutive_failures", message: `${s.counters.consecutiveFailures} phases failed in a row (consecutive_failures: ${cf})` });
  }
  if (checkBudgetAndDuration(d)) return;
  nextIteration(d);
}
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
  if (phase.kind === "group") return groupEnded(d, startGroup(d, phase));
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

/** A parallel group whose members all ended: its rules decide where control goes, like a phase's. */
export function groupEnded(d: Draft, end: GroupEnd | undefined): void {
  if (end) decide(d, end.group, end.result, false);
}
