/**
 * The terminal view's model of one iteration: its steps (phase runs, retry
 * waits, notes), each open until it ends, and the slots of the listr chain
 * that wait for them (tty-list.ts draws them; tty-reporter.ts feeds them).
 */

export type StepEnd = { kind: "ok"; title: string } | { kind: "failed"; title: string } | { kind: "skipped"; title: string };

/** One line of an iteration: open until `end` is set, then drawn as it ended. */
export interface Step {
  /** What the line says while it is open (timers are appended live). */
  title: () => string;
  output: string | null;
  end: StepEnd | null;
  /** Resolves the listr task waiting on this step. */
  settle: (() => void) | null;
  /** Steps that end when anything else happens next (retry waits). */
  closesOnNext: boolean;
  /** The words for such a step once the next thing has happened. */
  passedTitle?: () => string;
  /** The listr task drawing this step, once its slot has started. */
  task: { title: string | undefined; output: string | undefined } | null;
  /** The phase a phase step shows: members of a parallel group run at once, each on its own line. */
  phase?: string;
}

export interface IterationView {
  iteration: number;
  task: string | null;
  startedAt: number;
  steps: Step[];
  /** Slot index → resolver waiting for that step (or for the end of the iteration). */
  waiters: Map<number, () => void>;
  ended: boolean;
  endedAt: number | null;
  changes: number | null;
  tokens: number;
  costUsd: number;
  failures: number;
  /** Why the iteration was cut short with a phase in flight (interrupted, run ended), if it was. */
  cutShort: string | null;
  /** The group's listr task, to retitle it as the iteration goes. */
  group: { title: string | undefined } | null;
}

export function newIterationView(iteration: number, task: string | null, startedAt: number): IterationView {
  return { iteration, task, startedAt, steps: [], waiters: new Map(), ended: false, endedAt: null, changes: null, tokens: 0, costUsd: 0, failures: 0, cutShort: null, group: null };
}

/** A step that is over as soon as it is shown (notes, hook results, skips). */
export function instantStep(title: string, kind: StepEnd["kind"]): Step {
  return { title: () => title, output: null, end: { kind, title }, settle: null, closesOnNext: false, task: null };
}

export function endStep(step: Step, end: StepEnd): void {
  if (step.end !== null) return;
  step.end = end;
  step.settle?.();
}

/** Adds a step, ending a retry wait before it, and wakes the slot that shows it. */
export function addStep(view: IterationView, step: Step, maxSteps: number): void {
  const last = view.steps[view.steps.length - 1];
  if (last !== undefined && last.end === null && last.closesOnNext) endStep(last, { kind: "skipped", title: (last.passedTitle ?? last.title)() });
  view.steps.push(step);
  const slot = Math.min(view.steps.length - 1, maxSteps - 1);
  view.waiters.get(slot)?.();
  view.waiters.delete(slot);
}

/** Ends the iteration: open steps end as cut short by `reason`, and every waiting slot wakes. */
export function endView(view: IterationView, reason: string, now: number): void {
  if (view.ended) return;
  for (const step of view.steps) {
    if (step.end !== null) continue;
    if (!step.closesOnNext) view.cutShort = reason;
    endStep(step, step.closesOnNext ? { kind: "skipped", title: step.title() } : { kind: "failed", title: `${step.title()} (${reason})` });
  }
  view.ended = true;
  view.endedAt = now;
  for (const wake of view.waiters.values()) wake();
  view.waiters.clear();
}

/** The step at `index`, once there is one; null when the iteration ends first. */
export function waitForStep(view: IterationView, index: number): Promise<Step | null> {
  if (index < view.steps.length) return Promise.resolve(view.steps[index] ?? null);
  if (view.ended) return Promise.resolve(null);
  return new Promise((resolve) => {
    view.waiters.set(index, () => resolve(view.steps[index] ?? null));
  });
}

/** The phase run still open, to which live output belongs: `phase`'s own when several run at once (a parallel group). */
export function openPhaseStep(view: IterationView, phase?: string): Step | undefined {
  let latest: Step | undefined;
  for (let i = view.steps.length - 1; i >= 0; i--) {
    const s = view.steps[i]!;
    if (s.end !== null || s.closesOnNext) continue;
    if (phase !== undefined && s.phase === phase) return s;
    latest ??= s;
  }
  return latest;
}

export interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

export function deferred(): Deferred {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Strips terminal escapes and control characters an agent may print, so a live line cannot move the cursor. */
export function cleanLine(line: string): string {
  // eslint-disable-next-line no-control-regex
  return line.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-_]/g, "").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").replace(/\t/g, "  ");
}
