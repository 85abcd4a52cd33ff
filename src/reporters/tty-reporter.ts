/**
 * The terminal view: one listr2 group per iteration, phases as tasks with the
 * agent's last line live beneath them, timers in the titles; the run header
 * and the outcome are plain lines between the groups. Iterations are drawn
 * one after another (two live renderers would garble the screen): each gets
 * its own list once the previous one has ended (tty-list.ts), fed from the
 * model in tty-iteration.ts.
 */
import { nodeClock } from "../host/node-clock.ts";
import type { Reporter, RunEvent } from "../run/run-events.ts";
import { formatDelay, formatDuration, formatEventText, formatList, formatOutcome, formatUsage, paintFor, plural } from "../run/format-event-line.ts";
import type { Paint } from "../run/format-event-line.ts";
import { formatFailure, formatReason } from "../run/format-reason.ts";
import type { ReporterIo } from "./reporter-io.ts";
import { runFolderLines } from "./run-folder.ts";
import { addStep, cleanLine, deferred, endStep, endView, instantStep, newIterationView, openPhaseStep, type IterationView, type Step, type StepEnd } from "./tty-iteration.ts";
import { endedIterationLines, fitLine } from "./tty-lines.ts";
import { runIterationList } from "./tty-list.ts";
import { createLanesView, type LanesView } from "./tty-lanes.ts";

export interface TtyReporterOptions {
  /** Steps drawn per iteration before the rest are summed up in one line (default 500). */
  maxSteps?: number;
  /** How often the timers in titles are refreshed, in ms (default 1000). */
  tickMs?: number;
  /** The clock for live timers (default the host's). */
  now?: () => number;
  /**
   * How long an iteration runs before it is drawn live, in ms (default 100).
   * One that ends sooner is written as it ended: a loop of quick iterations
   * is never slowed down by drawing them, nor left behind.
   */
  revealMs?: number;
}

type PhaseStarted = Extract<RunEvent, { type: "phase.started" }>;
type PhaseFinished = Extract<RunEvent, { type: "phase.finished" }>;

/** Events that belong to the iteration a resumed run continues (notes before them stay plain lines). */
const RESUMED_STEP: ReadonlySet<RunEvent["type"]> = new Set(["phase.started", "phase.finished", "phase.skipped", "phase.retry", "policy.violation"]);

/** Events of a single loop that carry a task id. */
const SINGLE_LOOP_TASK: ReadonlySet<RunEvent["type"]> = new Set(["iteration.started", "iteration.finished", "task.updated"]);

/** How often at most a phase's latest output line is redrawn. */
const OUTPUT_MS = 50;

/** Resolves when `promise` does or after `ms`, whichever comes first. */
function settledWithin(promise: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([promise, elapsed]).finally(() => clearTimeout(timer));
}

export function createTtyReporter(io: ReporterIo, options: TtyReporterOptions = {}): Reporter {
  const maxSteps = Math.max(2, options.maxSteps ?? 500);
  const tickMs = options.tickMs ?? 1000;
  const now = options.now ?? nodeClock.now;
  const revealMs = options.revealMs ?? 100;
  const paint: Paint = paintFor(io.color);

  let maxIterations: number | null = null;
  let workdir: string | null = null;
  let runStartedAt: number | null = null;
  let current: IterationView | null = null;
  /** A resumed run continues an iteration that has started already: its view opens with its first step. */
  let resumedIteration: number | null = null;
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  let ticker: ReturnType<typeof setInterval> | null = null;

  const enqueue = (work: () => Promise<void> | void): void => {
    chain = chain.then(work).catch((error: unknown) => {
      io.stderr.write(`phaseloop: the progress view failed: ${error instanceof Error ? error.message : String(error)}\n`);
    });
  };

  const writeLines = (lines: string[]): void => {
    const width = io.terminal?.size().columns ?? io.columns ?? 0;
    io.stdout.write(lines.map((line) => `${width > 0 ? fitLine(line, width) : line}\n`).join(""));
  };
  const writeLine = (text: string): void => enqueue(() => writeLines([text]));

  const iterationTitle = (view: IterationView): string => {
    const of = maxIterations === null ? "" : `/${maxIterations}`;
    const parts = [paint.bold(`iteration ${view.iteration}${of}`)];
    if (view.task !== null) parts.push(`task ${view.task}`);
    if (view.ended) {
      if (view.changes !== null) parts.push(view.changes === 0 ? paint.yellow("no files changed") : `${plural(view.changes, "file")} changed`);
      if (view.failures > 0) parts.push(paint.red(`${plural(view.failures, "failed phase")}`));
      if (view.cutShort !== null) parts.push(paint.yellow(view.cutShort));
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

  /** Wakes the view waiting to be drawn when its iteration ends first. */
  const whenEnded = new Map<IterationView, () => void>();

  const closeView = (view: IterationView, reason: string): void => {
    endView(view, reason, now());
    if (view.group) view.group.title = iterationTitle(view);
    whenEnded.get(view)?.();
    whenEnded.delete(view);
  };

  const openView = (iteration: number, task: string | null): IterationView => {
    const view = newIterationView(iteration, task, now());
    current = view;
    resumedIteration = null;
    const ended = deferred();
    whenEnded.set(view, ended.resolve);
    const revealAt = nodeClock.now() + revealMs;
    enqueue(async () => {
      if (!view.ended) await settledWithin(ended.promise, revealAt - nodeClock.now());
      whenEnded.delete(view);
      if (view.ended) {
        writeLines(endedIterationLines(view, iterationTitle(view), paint, maxSteps));
        return;
      }
      startTicker();
      try {
        await runIterationList(view, { io, paint, maxSteps, title: iterationTitle });
      } finally {
        stopTicker();
      }
    });
    return view;
  };

  const phaseStep = (event: PhaseStarted): Step => {
    const startedAt = now();
    const attempt = event.attempt > 1 ? ` ${paint.dim(`(attempt ${event.attempt})`)}` : event.kind === "group" && event.members ? ` ${paint.dim(`(${event.members.join(", ")} at once)`)}` : "";
    return { title: () => `${paint.cyan(event.phase)}${attempt} · ${formatDuration(now() - startedAt)}`, output: null, end: null, settle: null, closesOnNext: false, task: null, phase: event.phase };
  };

  const finishPhase = (view: IterationView, event: PhaseFinished): void => {
    view.tokens += event.tokens;
    view.costUsd += event.cost_usd;
    const step = openPhaseStep(view, event.phase);
    const usage = formatUsage(event.tokens, event.cost_usd);
    const attempt = event.attempt > 1 ? ` ${paint.dim(`(attempt ${event.attempt})`)}` : "";
    const head = `${paint.cyan(event.phase)}${attempt}`;
    let end: StepEnd;
    if (event.status === "failed") {
      view.failures += 1;
      end = { kind: "failed", title: `${head} ${paint.red("failed")} in ${formatDuration(event.duration_ms)}: ${formatFailure(event)}${usage}` };
    } else if (event.status === "skipped") {
      end = { kind: "skipped", title: `${head} skipped` };
    } else {
      end = { kind: "ok", title: `${head} · ${formatDuration(event.duration_ms)}${usage}` };
    }
    if (step === undefined) addStep(view, instantStep(end.title, end.kind), maxSteps);
    else endStep(step, end);
  };

  /** An instant line in the iteration: ✖ for problems, ↓ for notes. */
  const noteStep = (view: IterationView, title: string, kind: "failed" | "skipped"): void => {
    addStep(view, instantStep(title, kind), maxSteps);
  };

  const showOutput = (view: IterationView, line: string, phase?: string): void => {
    const step = openPhaseStep(view, phase);
    if (step === undefined) return;
    const text = cleanLine(line).trim();
    if (text === "") return;
    step.output = text;
    if (step.task !== null) step.task.output = text;
  };

  // A phase may print far faster than a terminal redraws: its last line is drawn at most
  // every OUTPUT_MS, and before anything else the view shows.
  let pendingOutput: { view: IterationView; line: string; phase?: string } | null = null;
  let outputTimer: ReturnType<typeof setTimeout> | null = null;
  const drawOutput = (): void => {
    if (outputTimer !== null) clearTimeout(outputTimer);
    outputTimer = null;
    const pending = pendingOutput;
    pendingOutput = null;
    if (pending !== null) showOutput(pending.view, pending.line, pending.phase);
  };
  const onOutput = (view: IterationView, line: string, phase?: string): void => {
    if (line.trim() === "") return;
    pendingOutput = { view, line, phase };
    outputTimer ??= setTimeout(drawOutput, OUTPUT_MS);
  };

  const header = (pipeline: string, run: string, what: string): string =>
    `${paint.bold("phaseloop")} · ${pipeline} · run ${run}${what}${maxIterations === null ? "" : ` · up to ${plural(maxIterations, "iteration")}`}`;

  const finishRun = (event: Extract<RunEvent, { type: "run.finished" }>): void => {
    const icon = event.outcome === "complete" ? paint.green("✔") : event.outcome === "failed" ? paint.red("✖") : paint.yellow("■");
    writeLine(`${icon} ${formatOutcome(event.outcome, paint)}: ${formatReason(event.reason)}`);
    writeLine(paint.dim(`  ${plural(event.iterations, "iteration")} in ${formatDuration(event.elapsed_ms)}${formatUsage(event.tokens, event.cost_usd)}`));
    for (const line of runFolderLines(workdir, event.run)) writeLine(paint.dim(`  ${line}`));
  };

  const inIteration = (view: IterationView, event: RunEvent): void => {
    switch (event.type) {
      case "phase.started":
        addStep(view, phaseStep(event), maxSteps);
        return;
      case "phase.output":
        onOutput(view, event.line, event.phase);
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
        const why = formatFailure({ error: event.error, message: event.message, exit_code: null });
        const passed = () => `${paint.cyan(event.phase)} · retried after ${formatDelay(event.delay_ms)} (${why})`;
        addStep(
          view,
          {
            title: () => {
              const left = until - now();
              return left > 0 ? `${paint.cyan(event.phase)} · ${paint.yellow(`retrying in ${formatDelay(left)}`)} (${why})` : passed();
            },
            passedTitle: passed,
            output: null,
            end: null,
            settle: null,
            closesOnNext: true,
            task: null,
          },
          maxSteps,
        );
        return;
      }
      case "policy.violation": {
        const title = `${paint.cyan(event.phase)} · policy violation (${event.action}): ${plural(event.paths.length, "file")} outside the write globs: ${formatList(event.paths)}`;
        noteStep(view, title, event.action === "warn" ? "skipped" : "failed");
        return;
      }
      case "sandbox.refused":
        noteStep(view, formatEventText(event, paint), "failed");
        return;
      case "hook.finished":
        noteStep(view, formatEventText(event, paint), event.ok ? "skipped" : "failed");
        return;
      case "task.updated":
        noteStep(view, formatEventText(event, paint), event.status === "blocked" ? "failed" : "skipped");
        return;
      case "question.asked":
      case "question.answered":
        noteStep(view, formatEventText(event, paint), "skipped");
        return;
      case "note":
        // A warning is not a failure: it keeps the quiet ↓ mark, its words say the rest.
        noteStep(view, formatEventText(event, paint), "skipped");
        return;
      default:
        return;
    }
  };

  // a run with parallel lanes: its lanes side by side, in one list of their own, while they run
  let lanes: LanesView | null = null;
  const closeLanes = (): void => {
    if (lanes === null) return;
    lanes.close();
    lanes = null;
  };

  return {
    onEvent(event: RunEvent): void {
      if (closed) return;
      if (event.type !== "phase.output" && pendingOutput !== null) drawOutput();
      // a single loop's iteration and task events name their task too; a phase's only in a lane
      if (typeof event.task === "string" && (event.type.startsWith("lane.") || lanes !== null || !SINGLE_LOOP_TASK.has(event.type))) {
        if (lanes === null) {
          const view = createLanesView(io, paint, now, tickMs);
          lanes = view;
          enqueue(() => view.drawn);
        }
        if (lanes.onEvent(event)) return;
      } else if (lanes !== null && event.type !== "note" && event.type !== "task.updated") closeLanes();
      switch (event.type) {
        case "run.started":
          maxIterations = event.max_iterations;
          workdir = event.workdir;
          runStartedAt = now();
          writeLine(header(event.pipeline, event.run, ""));
          return;
        case "run.resumed":
          maxIterations = event.max_iterations ?? maxIterations;
          workdir = event.workdir ?? workdir;
          runStartedAt ??= now();
          resumedIteration = event.iteration;
          writeLine(header(event.pipeline ?? "", event.run, ` · resumed at iteration ${event.iteration}${event.phase === null ? "" : `, phase ${event.phase}`}`).replace(" ·  · ", " · "));
          return;
        case "iteration.started":
          if (current !== null) closeView(current, "iteration ended");
          openView(event.iteration, event.task);
          return;
        case "iteration.finished":
          if (current !== null && current.iteration === event.iteration) {
            current.changes = event.measured === false ? null : event.changes.length;
            closeView(current, "iteration ended");
            current = null;
          }
          return;
        case "run.interrupted":
        case "run.finished":
          if (current !== null) {
            closeView(current, event.type === "run.interrupted" ? "interrupted" : "run ended");
            current = null;
          }
          if (event.type === "run.interrupted") writeLine(formatEventText(event, paint));
          else finishRun(event);
          return;
        default:
          break;
      }
      if (current === null && resumedIteration !== null && RESUMED_STEP.has(event.type)) openView(resumedIteration, null);
      const view = current;
      if (view === null) {
        // Hooks, task updates and notes between iterations.
        if (event.type !== "phase.output") writeLine(formatEventText(event, paint));
        return;
      }
      inIteration(view, event);
    },
    async close(): Promise<void> {
      drawOutput();
      closeLanes();
      if (!closed) {
        closed = true;
        if (current !== null) {
          closeView(current, "run ended");
          current = null;
        }
      }
      await chain;
      stopTicker();
    },
  };
}
