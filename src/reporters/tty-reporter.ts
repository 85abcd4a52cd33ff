/**
 * The terminal view: listr2's default renderer, one task group per iteration,
 * phases as tasks with the agent's last line live beneath them.
 *
 * listr2 9 fixes a list's tasks when `run()` starts (`add()` is then ignored,
 * and every `enabled` is awaited before the first task runs), yet a loop's
 * iterations and an iteration's phases are only known as they happen. So each
 * iteration gets its own Listr, run after the previous one has ended (two live
 * renderers would garble the screen), and its group holds one untitled "slot".
 * A slot waits for the next step of the iteration (a phase run, a retry wait,
 * a note) and returns a list of two: that step, and the next slot. An untitled
 * task draws nothing and its subtasks draw at its own level, so the chain of
 * slots stays invisible, the steps line up under the iteration, and the last
 * slot simply ends with the iteration. (Async `enabled` cannot do this: listr2
 * awaits every task's `enabled` before running the first.) Lines outside iterations (the run header, the outcome)
 * are written between lists, never while one is drawing.
 */
import { Listr, ListrDefaultRendererLogLevels, ListrLogger, ProcessOutput } from "listr2";
import type { DefaultRenderer, ListrTaskWrapper } from "listr2";
import type { Reporter, RunEvent } from "../run/run-events.ts";
import {
  formatDelay,
  formatDuration,
  formatEventText,
  formatList,
  formatOutcome,
  formatUsage,
  paintFor,
  plural,
} from "./format-event-line.ts";
import type { Paint } from "./format-event-line.ts";
import type { ReporterIo } from "./reporter-io.ts";

export interface TtyReporterOptions {
  /** Steps drawn per iteration before the rest are summed up in one line (default 500). */
  maxSteps?: number;
  /** How often the timers in titles are refreshed, in ms (default 1000). */
  tickMs?: number;
  /** The clock for live timers (default Date.now). */
  now?: () => number;
}

type Wrapper = ListrTaskWrapper<unknown, typeof DefaultRenderer, typeof DefaultRenderer>;
type PhaseStarted = Extract<RunEvent, { type: "phase.started" }>;
type PhaseFinished = Extract<RunEvent, { type: "phase.finished" }>;

type StepEnd = { kind: "ok"; title: string } | { kind: "failed"; title: string } | { kind: "skipped"; title: string };

/** One line of an iteration: open until `end` is set, then drawn as it ended. */
interface Step {
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
}

interface IterationView {
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
  /** The group's listr task, to retitle it as the iteration goes. */
  group: { title: string | undefined } | null;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Strips terminal escapes and control characters an agent may print, so a live line cannot move the cursor. */
function cleanLine(line: string): string {
  // eslint-disable-next-line no-control-regex
  return line.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-_]/g, "").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "").replace(/\t/g, "  ");
}

/** How often at most a phase's latest output line is redrawn. */
const OUTPUT_MS = 50;

export function createTtyReporter(io: ReporterIo, options: TtyReporterOptions = {}): Reporter {
  const maxSteps = Math.max(2, options.maxSteps ?? 500);
  const tickMs = options.tickMs ?? 1000;
  const now = options.now ?? Date.now;
  const paint: Paint = paintFor(io.color);

  let maxIterations: number | null = null;
  let runStartedAt: number | null = null;
  let runTokens = 0;
  let runCost = 0;
  let current: IterationView | null = null;
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  let ticker: ReturnType<typeof setInterval> | null = null;

  const enqueue = (work: () => Promise<void> | void): void => {
    chain = chain.then(work).catch((error: unknown) => {
      io.stderr.write(`phaseloop: the progress view failed: ${error instanceof Error ? error.message : String(error)}\n`);
    });
  };

  const writeLine = (text: string): void => {
    enqueue(() => {
      io.stdout.write(`${text}\n`);
    });
  };

  const iterationTitle = (view: IterationView): string => {
    const of = maxIterations === null ? "" : `/${maxIterations}`;
    const parts = [paint.bold(`iteration ${view.iteration}${of}`)];
    if (view.task !== null) parts.push(`task ${view.task}`);
    if (view.ended) {
      if (view.changes !== null) parts.push(view.changes === 0 ? paint.yellow("no files changed") : `${plural(view.changes, "file")} changed`);
      if (view.failures > 0) parts.push(paint.red(`${plural(view.failures, "failed phase")}`));
    }
    const at = view.endedAt ?? now();
    parts.push(formatDuration(at - view.startedAt));
    const usage = formatUsage(view.tokens, view.costUsd);
    // The run's totals wait for the outcome line; a timer is enough here.
    const run = runStartedAt === null ? "" : paint.dim(` · run ${formatDuration(at - runStartedAt)}`);
    return parts.join(" · ") + usage + run;
  };

  const refresh = (): void => {
    if (current === null) return;
    if (current.group !== null) current.group.title = iterationTitle(current);
    for (const step of current.steps) {
      if (step.end === null && step.task !== null) step.task.title = step.title();
    }
  };

  const startTicker = (): void => {
    if (ticker !== null || tickMs <= 0) return;
    ticker = setInterval(refresh, tickMs);
    // A view must never keep the process alive on its own.
    (ticker as { unref?: () => void }).unref?.();
  };

  const stopTicker = (): void => {
    if (ticker !== null) clearInterval(ticker);
    ticker = null;
  };

  const addStep = (view: IterationView, step: Step): void => {
    // A retry wait ends when the next thing happens.
    const last = view.steps[view.steps.length - 1];
    if (last !== undefined && last.end === null && last.closesOnNext) endStep(last, { kind: "skipped", title: (last.passedTitle ?? last.title)() });
    view.steps.push(step);
    const index = view.steps.length - 1;
    const slot = Math.min(index, maxSteps - 1);
    view.waiters.get(slot)?.();
    view.waiters.delete(slot);
  };

  const endStep = (step: Step, end: StepEnd): void => {
    if (step.end !== null) return;
    step.end = end;
    step.settle?.();
  };

  const endView = (view: IterationView, reason: string): void => {
    if (view.ended) return;
    for (const step of view.steps) {
      if (step.end === null) endStep(step, step.closesOnNext ? { kind: "skipped", title: step.title() } : { kind: "failed", title: `${step.title()} (${reason})` });
    }
    view.ended = true;
    view.endedAt = now();
    for (const wake of view.waiters.values()) wake();
    view.waiters.clear();
    if (view.group) view.group.title = iterationTitle(view);
  };

  const waitForStep = (view: IterationView, index: number): Promise<Step | null> => {
    if (index < view.steps.length) return Promise.resolve(view.steps[index] ?? null);
    if (view.ended) return Promise.resolve(null);
    return new Promise((resolve) => {
      view.waiters.set(index, () => resolve(view.steps[index] ?? null));
    });
  };

  /** Runs one step as a listr task: live while open, then ✔, ✖ or ↓. */
  const runStep = async (step: Step, task: Wrapper): Promise<void> => {
    if (step.end === null) {
      const done = deferred();
      step.settle = done.resolve;
      step.task = task;
      if (step.output !== null) task.output = step.output;
      await done.promise;
      step.task = null;
    }
    const end = step.end ?? { kind: "ok", title: step.title() };
    if (end.kind === "failed") throw new Error(end.title);
    if (end.kind === "skipped") {
      task.skip(end.title);
      return;
    }
    task.title = end.title;
  };

  /** The slot that shows step `index`, or, for the last slot, every step from there on. */
  const runSlot = async (view: IterationView, index: number, task: Wrapper): Promise<unknown> => {
    const step = await waitForStep(view, index);
    if (step === null) return;
    if (index < maxSteps - 1) {
      return task.newListr(
        [{ title: step.title(), task: (_ctx, inner) => runStep(step, inner) }, { task: (_ctx, next) => runSlot(view, index + 1, next) }],
        { concurrent: false, exitOnError: false },
      );
    }
    // Out of slots: one line stands for the rest of the iteration.
    task.title = paint.dim("more steps…");
    let seen = index;
    for (;;) {
      const next = await waitForStep(view, seen);
      if (next === null) break;
      task.title = `${paint.dim(`+${seen - index + 1}`)} ${next.title()}`;
      if (next.end === null) {
        const done = deferred();
        next.settle = done.resolve;
        await done.promise;
      }
      seen += 1;
    }
    task.title = paint.dim(`${plural(seen - index, "more step")}`);
    return;
  };

  const noColor = Object.fromEntries(Object.values(ListrDefaultRendererLogLevels).map((level) => [level, (s: string) => s]));

  const runIteration = async (view: IterationView): Promise<void> => {
    const logger = new ListrLogger({
      useIcons: true,
      toStderr: [],
      processOutput: new ProcessOutput(io.stdout as NodeJS.WriteStream, io.stderr as NodeJS.WriteStream),
    });
    const rendererOptions = {
      logger,
      collapseSubtasks: false,
      collapseErrors: true,
      showErrorMessage: true,
      formatOutput: "truncate" as const,
      ...(io.color ? {} : { color: noColor }),
    };
    const list = new Listr(
      [
        {
          title: iterationTitle(view),
          task: (_ctx: unknown, group: Wrapper) => {
            view.group = group;
            return group.newListr([{ task: (_c: unknown, slot: Wrapper) => runSlot(view, 0, slot) }], { concurrent: false, exitOnError: false });
          },
        },
      ],
      {
        concurrent: false,
        exitOnError: false,
        // The runner owns SIGINT: it saves state and exits 130.
        registerSignalListeners: false,
        renderer: "default",
        // The caller chose this view; do not second-guess it from process.stdout.
        fallbackRenderer: "default",
        rendererOptions,
        fallbackRendererOptions: rendererOptions,
      },
    );
    startTicker();
    try {
      await list.run();
    } finally {
      view.group = null;
      stopTicker();
    }
  };

  const phaseStep = (event: PhaseStarted): Step => {
    const startedAt = now();
    const attempt = event.attempt > 1 ? ` ${paint.dim(`(attempt ${event.attempt})`)}` : "";
    const step: Step = {
      title: () => `${paint.cyan(event.phase)}${attempt} · ${formatDuration(now() - startedAt)}`,
      output: null,
      end: null,
      settle: null,
      closesOnNext: false,
      task: null,
    };
    return step;
  };

  const finishPhase = (view: IterationView, event: PhaseFinished): void => {
    view.tokens += event.tokens;
    view.costUsd += event.cost_usd;
    runTokens += event.tokens;
    runCost += event.cost_usd;
    const step = [...view.steps].reverse().find((s) => s.end === null && !s.closesOnNext);
    const usage = formatUsage(event.tokens, event.cost_usd);
    const attempt = event.attempt > 1 ? ` ${paint.dim(`(attempt ${event.attempt})`)}` : "";
    const head = `${paint.cyan(event.phase)}${attempt}`;
    let end: StepEnd;
    if (event.status === "failed") {
      view.failures += 1;
      const why = [event.error ?? "failed", event.message].filter((p) => p !== null && p !== "").join(": ");
      const exit = event.exit_code !== null && event.exit_code !== 0 ? ` · exit ${event.exit_code}` : "";
      end = { kind: "failed", title: `${head} ${paint.red("failed")} in ${formatDuration(event.duration_ms)} (${why})${exit}${usage}` };
    } else if (event.status === "skipped") {
      end = { kind: "skipped", title: `${head} skipped` };
    } else {
      end = { kind: "ok", title: `${head} · ${formatDuration(event.duration_ms)}${usage}` };
    }
    if (step === undefined) {
      addStep(view, { title: () => end.title, output: null, end, settle: null, closesOnNext: false, task: null });
      return;
    }
    endStep(step, end);
  };

  /** An instant line in the iteration: ✖ for problems, ↓ for notes. */
  const noteStep = (view: IterationView, title: string, kind: "failed" | "skipped"): void => {
    addStep(view, { title: () => title, output: null, end: { kind, title }, settle: null, closesOnNext: false, task: null });
  };

  const openView = (iteration: number, task: string | null): IterationView => {
    const view: IterationView = {
      iteration,
      task,
      startedAt: now(),
      steps: [],
      waiters: new Map(),
      ended: false,
      endedAt: null,
      changes: null,
      tokens: 0,
      costUsd: 0,
      failures: 0,
      group: null,
    };
    current = view;
    enqueue(() => runIteration(view));
    return view;
  };

  const showOutput = (view: IterationView, line: string): void => {
    const step = [...view.steps].reverse().find((s) => s.end === null && !s.closesOnNext);
    if (step === undefined) return;
    const text = cleanLine(line).trim();
    if (text === "") return;
    step.output = text;
    if (step.task !== null) step.task.output = text;
  };

  // A phase may print far faster than a terminal redraws: its last line is drawn at most
  // every OUTPUT_MS, and before anything else the view shows.
  let pendingOutput: { view: IterationView; line: string } | null = null;
  let outputTimer: ReturnType<typeof setTimeout> | null = null;
  const drawOutput = (): void => {
    if (outputTimer !== null) clearTimeout(outputTimer);
    outputTimer = null;
    const pending = pendingOutput;
    pendingOutput = null;
    if (pending !== null) showOutput(pending.view, pending.line);
  };
  const onOutput = (view: IterationView, line: string): void => {
    if (line.trim() === "") return;
    pendingOutput = { view, line };
    outputTimer ??= setTimeout(drawOutput, OUTPUT_MS);
  };

  const outsideLine = (event: RunEvent): void => {
    writeLine(formatEventText(event, paint));
  };

  return {
    onEvent(event: RunEvent): void {
      if (closed) return;
      if (event.type !== "phase.output" && pendingOutput !== null) drawOutput();
      switch (event.type) {
        case "run.started":
          maxIterations = event.max_iterations;
          runStartedAt = now();
          writeLine(`${paint.bold("phaseloop")} · ${event.pipeline} · run ${event.run} · up to ${plural(event.max_iterations, "iteration")}`);
          return;
        case "run.resumed":
          runStartedAt ??= now();
          outsideLine(event);
          return;
        case "iteration.started":
          if (current !== null) endView(current, "iteration ended");
          openView(event.iteration, event.task);
          return;
        case "iteration.finished":
          if (current !== null && current.iteration === event.iteration) {
            current.changes = event.changes.length;
            endView(current, "iteration ended");
            current = null;
          }
          return;
        case "run.interrupted":
        case "run.finished": {
          if (current !== null) {
            endView(current, event.type === "run.interrupted" ? "interrupted" : "run ended");
            current = null;
          }
          if (event.type === "run.interrupted") {
            outsideLine(event);
            return;
          }
          const reason = event.reason.message === "" ? event.reason.code : `${event.reason.message} ${paint.dim(`(${event.reason.code})`)}`;
          const icon = event.outcome === "complete" ? paint.green("✔") : event.outcome === "failed" ? paint.red("✖") : paint.yellow("■");
          writeLine(`${icon} ${formatOutcome(event.outcome, paint)}: ${reason}`);
          writeLine(paint.dim(`  ${plural(event.iterations, "iteration")} in ${formatDuration(event.elapsed_ms)}${formatUsage(event.tokens, event.cost_usd)}`));
          return;
        }
        default:
          break;
      }
      const view = current;
      if (view === null) {
        // Hooks, task updates and notes between iterations.
        if (event.type !== "phase.output") outsideLine(event);
        return;
      }
      switch (event.type) {
        case "phase.started":
          addStep(view, phaseStep(event));
          return;
        case "phase.output":
          onOutput(view, event.line);
          return;
        case "phase.finished":
          finishPhase(view, event);
          return;
        case "phase.skipped":
          noteStep(view, `${paint.cyan(event.phase)} skipped${event.reason === "" ? "" : `: ${event.reason}`}`, "skipped");
          return;
        case "phase.retry": {
          const startedAt = now();
          const until = startedAt + event.delay_ms;
          const why = event.message === null || event.message === "" ? event.error : `${event.error}: ${event.message}`;
          addStep(view, {
            title: () => {
              const left = until - now();
              return left > 0
                ? `${paint.cyan(event.phase)} · ${paint.yellow(`retrying in ${formatDelay(left)}`)} (${why})`
                : `${paint.cyan(event.phase)} · retried after ${formatDelay(event.delay_ms)} (${why})`;
            },
            passedTitle: () => `${paint.cyan(event.phase)} · retried after ${formatDelay(event.delay_ms)} (${why})`,
            output: null,
            end: null,
            settle: null,
            closesOnNext: true,
            task: null,
          });
          return;
        }
        case "policy.violation": {
          const title = `${paint.cyan(event.phase)} · policy violation (${event.action}): ${plural(event.paths.length, "file")} outside the write globs: ${formatList(event.paths)}`;
          noteStep(view, title, event.action === "warn" ? "skipped" : "failed");
          return;
        }
        case "hook.finished":
          noteStep(view, formatEventText(event, paint), event.ok ? "skipped" : "failed");
          return;
        case "task.updated":
          noteStep(view, formatEventText(event, paint), event.status === "blocked" ? "failed" : "skipped");
          return;
        case "note":
          // A warning is not a failure: it keeps the quiet ↓ mark, its words say the rest.
          noteStep(view, formatEventText(event, paint), "skipped");
          return;
        default:
          return;
      }
    },
    async close(): Promise<void> {
      drawOutput();
      if (!closed) {
        closed = true;
        if (current !== null) {
          endView(current, "run ended");
          current = null;
        }
      }
      await chain;
      stopTicker();
    },
  };
}
