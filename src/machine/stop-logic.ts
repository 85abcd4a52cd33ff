/**
 * Stopping: the stop rules, budgets and max_duration, the end of the run with
 * its outcome hook, and the exit code each outcome maps to. The precedence is
 * documented in docs/stop-logic.md.
 */
import { evaluateExpression, isTruthy } from "../expr/index.ts";
import type { HistoryEntry } from "../pipeline/context.ts";
import type { HookName, Outcome } from "../pipeline/spec.ts";
import { CAPS, contextOf, renderIn, type Draft } from "./draft.ts";
import { runHook } from "./hooks.ts";
import type { Snapshot, StopReason } from "./types.ts";

export function checkStopRules(d: Draft): boolean {
  if (d.m.stopRules.length === 0) return false;
  const ctx = contextOf(d);
  for (const rule of d.m.stopRules) {
    const v = evaluateExpression(rule.if, ctx);
    if (!v.ok) {
      d.fx.push({ type: "note", level: "warning", message: `stop rule "${rule.ifText}" could not be evaluated (${v.error})` });
      continue;
    }
    if (isTruthy(v.value)) {
      const rr = rule.reason ? renderIn(d, rule.reason, ctx) : undefined;
      stop(d, rule.outcome, { code: "stop_rule", message: rr?.ok && rr.value.trim() ? rr.value : `stop rule: ${rule.ifText}` });
      return true;
    }
  }
  return false;
}

export function checkBudgetAndDuration(d: Draft): boolean {
  const reason = limitReached(d.s.limits, d.s);
  if (reason) stop(d, "stopped", reason);
  return reason !== null;
}

/**
 * The first run-wide limit the totals reach (the token budget, the cost
 * budget, max_duration, in that order), or null. A run with lanes checks its
 * totals over all lanes (`scope` says so in the message).
 */
export function limitReached(l: Pick<Snapshot["limits"], "budgetTokens" | "budgetCostUsd" | "maxDurationMs">, totals: { tokens: number; costUsd: number; elapsedMs: number }, scope = ""): StopReason | null {
  if (l.budgetTokens !== null && totals.tokens >= l.budgetTokens) return { code: "budget_tokens", message: `used ${totals.tokens} tokens of a budget of ${l.budgetTokens}${scope}` };
  if (l.budgetCostUsd !== null && totals.costUsd >= l.budgetCostUsd) return { code: "budget_cost", message: `spent $${totals.costUsd.toFixed(2)} of a budget of $${l.budgetCostUsd.toFixed(2)}${scope}` };
  if (l.maxDurationMs !== null && totals.elapsedMs >= l.maxDurationMs) return { code: "max_duration", message: `ran for ${Math.round(totals.elapsedMs / 1000)}s, over max_duration (${Math.round(l.maxDurationMs / 1000)}s)` };
  return null;
}

export function stop(d: Draft, outcome: Outcome | "stopped", reason: StopReason): void {
  const s = d.s;
  const standing = s.unhandled?.[0];
  if (outcome === "complete" && standing) {
    // a crashed agent or a missing required output is never passed over on the way to complete
    const more = s.unhandled!.length > 1 ? ` (and ${s.unhandled!.length - 1} more)` : "";
    outcome = "failed";
    reason = { code: "unhandled_failure", message: `cannot complete: phase "${standing.phase}" failed (${standing.message})${more} and no rule tested its status or error; the run would otherwise have completed: ${reason.message}` };
  }
  if (s.iterationOpen) {
    // record the iteration the run ends in; its outcome is the run's
    s.iterationOpen = false;
    const record: HistoryEntry = { iteration: s.iteration, phases: s.iterationPhases, changes: s.iterationChanges, task: s.currentTask };
    s.history.push(record);
    if (s.history.length > CAPS.history) s.history.splice(0, s.history.length - CAPS.history);
    d.fx.push({ type: "iteration.end", iteration: s.iteration, changes: s.iterationChanges, record });
  }
  s.status = "done";
  s.awaiting = null;
  s.outcome = { outcome, reason };
  const hook: HookName = outcome === "complete" ? "on_complete" : outcome === "failed" ? "on_failed" : "on_blocked";
  runHook(d, hook, false, "iteration", { PHASELOOP_OUTCOME: outcome, PHASELOOP_REASON: reason.message, PHASELOOP_STOP_CODE: reason.code });
  d.fx.push({ type: "stop", outcome, reason });
}

/** Exit codes of the CLI contract. */
export function exitCodeFor(outcome: Outcome | "stopped" | "interrupted"): number {
  switch (outcome) {
    case "complete":
      return 0;
    case "failed":
      return 1;
    case "interrupted":
      return 130;
    default:
      return 3;
  }
}
