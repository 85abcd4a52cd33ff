/**
 * An ask phase's question: answered by `resume --answer`, by a person at the
 * terminal, or left waiting. A run that waits saves its state and ends with
 * exit 3 (`awaiting answer`); under GitHub Actions the question also goes to
 * the step summary and the job's outputs (reporters/github-actions.ts), so a
 * workflow can hand it to a person.
 */
import type { Effect, MachineEvent } from "../machine/types.ts";
import type { RunContext } from "./run-context.ts";

export type QuestionEffect = Extract<Effect, { type: "question.ask" }>;

/** Asks a person at the terminal; resolves with the answer, null when the timeout passed, undefined when interrupted. */
export type Asker = (question: { phase: string; question: string; timeoutMs: number }, signal: AbortSignal) => Promise<string | null | undefined>;

/** Where an answer can come from in this life of the run. */
export interface AnswerSource {
  /** Given on the command line (`resume --answer` / `--answer-file`) for the question of phase run `seq`; used once, for that question only. */
  given?: { text: string; used: boolean; seq: number };
  /** A terminal to ask in. */
  ask?: Asker;
}

/** Carry out a question.ask effect: the answer.given event, or undefined when the run must wait (or was interrupted). */
export async function askQuestion(e: QuestionEffect, ctx: RunContext, source: AnswerSource): Promise<MachineEvent | undefined> {
  if (source.given && !source.given.used && source.given.seq === e.seq) {
    source.given.used = true;
    return answered(e, ctx, source.given.text);
  }
  if (source.ask) {
    ctx.emit({ type: "question.asked", iteration: e.iteration, phase: e.phase, question: e.question });
    const answer = await source.ask({ phase: e.phase, question: e.question, timeoutMs: e.timeoutMs }, ctx.signal);
    if (answer === undefined || ctx.interrupted()) return undefined;
    if (answer === null) return { type: "answer.given", at: ctx.host.clock.now(), phase: e.phase, answer: null };
    return answered(e, ctx, answer);
  }
  // the run waits; under GitHub Actions the reporter puts the question in the step summary and the job outputs
  ctx.emit({ type: "question.asked", iteration: e.iteration, phase: e.phase, question: e.question });
  return undefined;
}

function answered(e: QuestionEffect, ctx: RunContext, answer: string): MachineEvent {
  ctx.emit({ type: "question.answered", iteration: e.iteration, phase: e.phase, question: e.question, answer });
  return { type: "answer.given", at: ctx.host.clock.now(), phase: e.phase, answer };
}
