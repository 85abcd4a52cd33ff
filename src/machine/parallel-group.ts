/**
 * Parallel groups: entering a group starts every member at once (one
 * phase.run effect each); each member's result comes back as its own
 * phase.finished, is retried or recorded like a single phase's, and when the
 * last has ended the group's `join` decides its status, which its rules read.
 * A member that finished is in the snapshot: a resumed run starts only the
 * members still running.
 */
import { pendingPhase } from "./build-context.ts";
import { contextOf, phaseNamed, type Draft } from "./draft.ts";
import { phaseRunEffect, recordResult, renderFailure, retryDelay } from "./phase-results.ts";
import type { CompiledPhase, PhaseResult } from "./types.ts";
import { evaluateExpression, isTruthy } from "../expr/index.ts";

/** A group whose members have all ended, with its result: its rules decide where control goes (control-flow.ts). */
export interface GroupEnd {
  group: CompiledPhase;
  result: PhaseResult;
}

/** Enter a group: skip the members whose `when` does not hold, start the others. */
export function startGroup(d: Draft, group: CompiledPhase): GroupEnd | undefined {
  const s = d.s;
  s.status = "running";
  const running: Record<string, { attempt: number; seq: number; delayMs?: number }> = {};
  s.awaiting = { kind: "group", group: group.name, running };
  d.fx.push({ type: "group.started", group: group.name, iteration: s.iteration, join: group.join ?? "all_success", members: [...(group.members ?? [])] });
  const ctx = contextOf(d);
  for (const name of group.members ?? []) {
    const member = phaseNamed(d, name);
    if (member.when) {
      const v = evaluateExpression(member.when, ctx);
      if (!v.ok || !isTruthy(v.value)) {
        const reason = v.ok ? `when: ${member.whenText} is false` : `when: ${member.whenText} could not be evaluated (${v.error})`;
        d.fx.push({ type: "phase.skipped", phase: name, iteration: s.iteration, reason });
        s.results[name] = { ...(s.results[name] ?? pendingPhase()), status: "skipped", iteration: s.iteration };
        s.iterationPhases[name] = { status: "skipped", error: null, exit_code: null, output: {}, text_tail: "" };
        continue;
      }
    }
    startMember(d, group, member, 1, ctx);
  }
  if (Object.keys(running).length === 0) return finishGroup(d, group);
  return undefined;
}

/** Start (or start again) the members still running, after a resume. */
export function resumeGroup(d: Draft): GroupEnd | undefined {
  const a = d.s.awaiting;
  if (a?.kind !== "group") return undefined;
  const group = phaseNamed(d, a.group);
  const ctx = contextOf(d);
  for (const [name, run] of Object.entries(a.running)) startMember(d, group, phaseNamed(d, name), run.attempt, ctx);
  if (Object.keys(a.running).length === 0) return finishGroup(d, group);
  return undefined;
}

function startMember(d: Draft, group: CompiledPhase, member: CompiledPhase, attempt: number, ctx: Parameters<typeof phaseRunEffect>[4], delayMs?: number): void {
  const s = d.s;
  const a = s.awaiting;
  if (a?.kind !== "group") return;
  s.phaseSeq += 1;
  const run = phaseRunEffect(d, member, attempt, s.phaseSeq, ctx);
  a.running[member.name] = { attempt, seq: s.phaseSeq, ...(delayMs ? { delayMs } : {}) };
  if ("error" in run) {
    d.fx.push({ type: "phase.error", phase: member.name, iteration: s.iteration, message: run.error });
    delete a.running[member.name];
    recordResult(d, member, attempt, renderFailure(d, run.error));
    return;
  }
  d.fx.push({ ...run, group: group.name, groupWrite: otherWrites(d, group, member.name), ...(delayMs ? { delayMs } : {}) });
}

/** The write globs of the other members: changes there are theirs, not this member's. */
function otherWrites(d: Draft, group: CompiledPhase, name: string): string[] {
  const out: string[] = [];
  for (const other of group.members ?? []) {
    if (other === name) continue;
    const tools = phaseNamed(d, other).tools;
    out.push(...((tools ? d.m.tools[tools]?.write : undefined) ?? []));
  }
  return out;
}

/** A member's result: retried (at once, after its delay, beside the others) or recorded; the last one ends the group. */
export function memberFinished(d: Draft, name: string, attempt: number, r: PhaseResult): GroupEnd | undefined {
  const s = d.s;
  const a = s.awaiting;
  if (a?.kind !== "group") return undefined;
  const group = phaseNamed(d, a.group);
  const member = phaseNamed(d, name);
  s.tokens += r.tokens;
  s.costUsd += r.cost_usd;
  s.counters.phasesRun += 1;
  s.iterationChanges = [...r.changes];
  // a member that broke its tool set counts as failed, and no verdict is read from it
  if (r.error === "policy_violation") r = { ...r, output: {} };
  const delay = retryDelay(member, attempt, r);
  if (delay !== null) {
    s.counters.retries += 1;
    startMember(d, group, member, attempt + 1, contextOf(d), delay);
    return undefined;
  }
  delete a.running[name];
  recordResult(d, member, attempt, r);
  if (Object.keys(a.running).length === 0) return finishGroup(d, group);
  return undefined;
}

/** Every member has ended: the join decides the group's status (its rules, where control goes). */
function finishGroup(d: Draft, group: CompiledPhase): GroupEnd {
  const s = d.s;
  s.awaiting = null;
  s.status = "running";
  const members = group.members ?? [];
  const status = (n: string) => (s.results[n]?.iteration === s.iteration ? s.results[n]!.status : "pending");
  const succeeded = members.filter((n) => status(n) === "succeeded");
  const failed = members.filter((n) => status(n) === "failed");
  const skipped = members.filter((n) => status(n) === "skipped");
  const join = group.join ?? "all_success";
  const ok = join === "all_done" || (join === "one_success" ? succeeded.length > 0 : failed.length === 0);
  const text = `${succeeded.length} succeeded${failed.length ? ` (${succeeded.join(", ")})` : ""}, ${failed.length} failed${failed.length ? ` (${failed.join(", ")})` : ""}${skipped.length ? `, ${skipped.length} skipped` : ""}`;
  const message = ok ? null : join === "one_success" ? `join one_success: no member succeeded (${failed.join(", ") || "all skipped"})` : `join all_success: ${failed.join(", ")} failed`;
  const durations = members.map((n) => (s.results[n]?.iteration === s.iteration ? s.results[n]!.duration_ms : 0));
  const r: PhaseResult = {
    exit_code: null,
    output: { succeeded, failed, skipped },
    text,
    error: ok ? null : "join_failed",
    message,
    output_tail: message ?? "",
    tokens: 0,
    cost_usd: 0,
    duration_ms: Math.max(0, ...durations),
    changes: s.iterationChanges,
    jitter: 0,
  };
  d.fx.push({ type: "group.finished", group: group.name, iteration: s.iteration, join, status: ok ? "succeeded" : "failed", succeeded, failed, skipped, message, duration_ms: r.duration_ms });
  recordResult(d, group, 1, r);
  return { group, result: r };
}
