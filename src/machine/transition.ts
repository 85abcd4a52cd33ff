/**
 * The state machine: `transition(machine, snapshot, event)` returns the next
 * snapshot and the effects to carry out, and carries out none of them. Pure
 * and deterministic: no clock (time comes in events), no randomness (jitter
 * comes in events), and the input snapshot is never mutated.
 *
 * Its parts: iteration.ts (where iterations begin and end), phase-results.ts
 * (running a phase and what its result does), stop-logic.ts (stop rules,
 * limits, the end of the run), task-queue.ts (tasks and the final gate),
 * hooks.ts. The stop logic and its precedence are documented in
 * docs/stop-logic.md. A task queue worked in parallel lanes is scheduled by
 * lanes.ts (`laneTransition`, with the same queue rules and limits); each
 * lane's loop is this machine over one task, a child snapshot, as a
 * sub-pipeline is (compile-loaded.ts compiles it with its parent).
 */
import { cloneJson } from "./clone-json.ts";
import { phaseNamed, type Draft } from "./draft.ts";
import { runHook } from "./hooks.ts";
import { beginIteration } from "./iteration.ts";
import { answerGiven, enterPhase, phaseFinished, runPhase } from "./phase-results.ts";
import { memberFinished, resumeGroup } from "./parallel-group.ts";
import { stop } from "./stop-logic.ts";
import { toTaskState } from "./task-queue.ts";
import type { Effect, Machine, MachineEvent, Snapshot, TransitionResult } from "./types.ts";

export { CAPS } from "./draft.ts";
export { initialSnapshot, resolveLimit, type InitialOptions } from "./initial-snapshot.ts";
export { exitCodeFor } from "./stop-logic.ts";
export type { ErrorClass } from "../pipeline/spec.ts";

/**
 * A copy the transition may change. History entries, most of a snapshot, are
 * never changed once recorded, so the copies share them.
 */
function cloneSnapshot(snapshot: Snapshot): Snapshot {
  const copy: Snapshot = cloneJson({ ...snapshot, history: [] });
  copy.history = snapshot.history.slice();
  return copy;
}

/** The next snapshot and the effects to carry out. Never mutates its input. */
export function transition(machine: Machine, snapshot: Snapshot, event: MachineEvent): TransitionResult {
  const s = cloneSnapshot(snapshot);
  const fx: Effect[] = [];
  if (s.status === "done") return { snapshot: s, effects: [] };
  if (event.type === "resumed") {
    s.lastAt = event.at; // time spent interrupted does not count
  } else {
    if (s.lastAt !== null && event.at > s.lastAt) s.elapsedMs += event.at - s.lastAt;
    s.lastAt = event.at;
  }
  const d: Draft = { m: machine, s, fx };
  switch (event.type) {
    case "start":
      if (s.status !== "idle") break;
      s.status = "running";
      if (machine.tasks) {
        s.awaiting = { kind: "tasks" };
        fx.push({ type: "tasks.load" });
      } else beginIteration(d);
      break;
    case "tasks.loaded":
      if (s.awaiting?.kind !== "tasks") break;
      s.awaiting = null;
      s.tasks = event.tasks.map(toTaskState);
      beginIteration(d);
      break;
    case "phase.finished":
      if (s.awaiting?.kind === "group" && s.awaiting.running[event.phase]?.attempt === event.attempt) {
        memberFinished(d, event.phase, event.attempt, event.result);
        break;
      }
      if (s.awaiting?.kind !== "phase" || s.awaiting.phase !== event.phase || s.awaiting.attempt !== event.attempt) {
        fx.push({ type: "note", level: "warning", message: `ignored a result for phase "${event.phase}" that was not running` });
        break;
      }
      phaseFinished(d, event.phase, event.attempt, event.result);
      break;
    case "answer.given": {
      const a = s.awaiting;
      if (a?.kind !== "answer" || a.phase !== event.phase) {
        fx.push({ type: "note", level: "warning", message: `ignored an answer for phase "${event.phase}" that asked nothing` });
        break;
      }
      answerGiven(d, event.phase, event.answer, 0);
      break;
    }
    case "retry.fired":
      if (s.awaiting?.kind !== "retry") break;
      s.status = "running";
      runPhase(d, phaseNamed(d, s.awaiting.phase), s.awaiting.attempt);
      break;
    case "hook.finished": {
      const a = s.awaiting;
      if (a?.kind !== "hook" || a.hook !== event.hook) break;
      s.awaiting = null;
      if (!event.ok) {
        stop(d, "blocked", { code: "hook_blocked", message: `hook ${event.hook} failed${event.message ? `: ${event.message}` : ""}` });
        break;
      }
      if (a.then === "iteration") enterPhase(d, machine.head);
      else beginIteration(d);
      break;
    }
    case "interrupted":
      s.status = "interrupted";
      break;
    case "resumed": {
      if (s.status !== "interrupted" && s.status !== "running" && s.status !== "waiting") break;
      s.status = "running";
      const a = s.awaiting;
      if (!a && s.iteration === 0 && machine.tasks && !s.tasks) {
        // stopped before it read its tasks
        s.awaiting = { kind: "tasks" };
        fx.push({ type: "tasks.load" });
      } else if (!a) beginIteration(d);
      else if (a.kind === "phase" || a.kind === "retry") runPhase(d, phaseNamed(d, a.phase), a.attempt);
      else if (a.kind === "tasks") fx.push({ type: "tasks.load" });
      else if (a.kind === "hook") runHook(d, a.hook, true, a.then);
      else if (a.kind === "group") resumeGroup(d);
      else if (a.kind === "answer") {
        const timeoutMs = phaseNamed(d, a.phase).timeoutMs;
        if (timeoutMs > 0 && a.askedAt !== undefined && event.at - a.askedAt >= timeoutMs) {
          // a person's time is wall-clock time: a question left longer than its timeout has timed out
          fx.push({ type: "note", level: "warning", message: `phase "${a.phase}" asked ${Math.round((event.at - a.askedAt) / 1000)}s ago, longer than its timeout (${Math.round(timeoutMs / 1000)}s): it failed with timeout, and an answer given now is not used` });
          answerGiven(d, a.phase, null, event.at - a.askedAt);
        } else {
          // the question is asked again: answered now, or the run waits again
          s.status = "waiting";
          fx.push({ type: "question.ask", phase: a.phase, iteration: s.iteration, seq: a.seq, question: a.question, timeoutMs: timeoutMs > 0 && a.askedAt !== undefined ? timeoutMs - (event.at - a.askedAt) : timeoutMs });
        }
      }
      break;
    }
  }
  return { snapshot: s, effects: fx };
}
