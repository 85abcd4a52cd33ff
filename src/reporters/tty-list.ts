/**
 * Draws one iteration with listr2's default renderer.
 *
 * listr2 9 fixes a list's tasks when `run()` starts (`add()` is then ignored,
 * and every `enabled` is awaited before the first task runs), yet an
 * iteration's phases are only known as they happen. So the iteration's group
 * holds one untitled "slot". A slot waits for the next step of the iteration
 * (a phase run, a retry wait, a note) and returns a list of two: that step,
 * and the next slot. An untitled task draws nothing and its subtasks draw at
 * its own level, so the chain of slots stays invisible, the steps line up
 * under the iteration, and the last slot simply ends with the iteration.
 *
 * The renderer is given the terminal's size as it is now, read at every
 * frame, so the view fits the terminal and follows a resize.
 */
import { Listr, ListrDefaultRendererLogLevels, ListrLogger, ProcessOutput } from "listr2";
import type { DefaultRenderer, ListrTask, ListrTaskWrapper } from "listr2";
import { plural, type Paint } from "../run/format-event-line.ts";
import type { ReporterIo, TerminalSize } from "./reporter-io.ts";
import { deferred, waitForStep, type IterationView, type Step } from "./tty-iteration.ts";

export type Wrapper = ListrTaskWrapper<unknown, typeof DefaultRenderer, typeof DefaultRenderer>;

export interface IterationListOptions {
  io: ReporterIo;
  paint: Paint;
  /** Steps drawn before the rest are summed up in one line. */
  maxSteps: number;
  /** The group's title as the iteration stands now. */
  title: (view: IterationView) => string;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*\u0007/g;

/**
 * listr2 hands log-update a copy of the stream made when a list starts, so a
 * width read from it would be the width of that moment. This output gives
 * every copy live `columns` and `rows`, and keeps the last frame drawn.
 */
class TerminalOutput extends ProcessOutput {
  private readonly size: () => TerminalSize;
  /** The lines of the frame on the screen, as drawn. */
  frame: string[] = [];
  constructor(io: ReporterIo, size: () => TerminalSize) {
    super(io.stdout as NodeJS.WriteStream, io.stderr as NodeJS.WriteStream);
    this.size = size;
  }
  override get stdout(): NodeJS.WriteStream {
    const out = super.stdout;
    const size = this.size;
    const write = out.write.bind(out) as (chunk: string) => boolean;
    Object.defineProperties(out, {
      columns: { get: () => size().columns, configurable: true },
      rows: { get: () => size().rows, configurable: true },
      write: {
        value: (chunk: string) => {
          // log-update writes each frame whole, ending with a newline
          const text = String(chunk).replace(ANSI, "");
          if (text.endsWith("\n")) this.frame = text.slice(0, -1).split("\n");
          return write(chunk);
        },
        configurable: true,
        writable: true,
      },
    });
    return out;
  }
}

/**
 * A terminal that narrows re-wraps the frame's lines, so log-update, which
 * erases as many lines as it drew, would leave pieces behind: the frame as
 * the terminal now shows it is erased here, and blank lines are left for
 * log-update's own erase to take back.
 */
function eraseReflowedFrame(frame: readonly string[], columns: number): string {
  if (frame.length === 0 || columns <= 0) return "";
  const rows = frame.reduce((sum, line) => sum + Math.max(1, Math.ceil([...line].length / columns)), 0);
  return `\u001b[${rows}A\r\u001b[J${"\n".repeat(frame.length)}`;
}

/** Runs one step as a listr task: live while open, then ✔, ✖ or ↓. */
async function runStep(step: Step, task: Wrapper): Promise<void> {
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
}

/** The slot that shows step `index`, or, for the last slot, every step from there on. */
async function runSlot(view: IterationView, index: number, task: Wrapper, o: IterationListOptions): Promise<unknown> {
  const step = await waitForStep(view, index);
  if (step === null) return;
  if (index < o.maxSteps - 1) {
    return task.newListr(
      [{ title: step.title(), task: (_ctx, inner) => runStep(step, inner) }, { task: (_ctx, next) => runSlot(view, index + 1, next, o) }],
      { concurrent: true, exitOnError: false },
    );
  }
  // Out of slots: one line stands for the rest of the iteration.
  task.title = o.paint.dim("more steps…");
  let seen = index;
  for (;;) {
    const next = await waitForStep(view, seen);
    if (next === null) break;
    task.title = `${o.paint.dim(`+${seen - index + 1}`)} ${next.title()}`;
    if (next.end === null) {
      const done = deferred();
      next.settle = done.resolve;
      await done.promise;
    }
    seen += 1;
  }
  task.title = o.paint.dim(`${plural(seen - index, "more step")}`);
  return;
}

const noColor = Object.fromEntries(Object.values(ListrDefaultRendererLogLevels).map((level) => [level, (s: string) => s]));

/** Draws the iteration until it ends; a failed phase leaves the iteration marked ✖. */
export async function runIterationList(view: IterationView, o: IterationListOptions): Promise<void> {
  await runList(o.io, o.paint, [
    {
      title: o.title(view),
      task: (_ctx: unknown, group: Wrapper) => {
        view.group = group;
        return group.newListr(
          [
            {
              task: async (_c: unknown, slot: Wrapper) => {
                const drawn = await runSlot(view, 0, slot, o);
                return drawn;
              },
            },
            {
              // after the last step: an iteration with a failed or cut-short phase is not ticked
              task: () => {
                // the iteration may have ended before its group was drawn: its title says how it ended
                group.title = o.title(view);
                if (view.failures > 0 || view.cutShort !== null) throw new Error(o.title(view));
              },
            },
          ],
          { concurrent: false, exitOnError: false },
        );
      },
    },
  ]).finally(() => {
    view.group = null;
  });
}

export type ListTask = ListrTask<unknown, typeof DefaultRenderer, typeof DefaultRenderer>;

/** Draws a list of tasks with listr2's default renderer until they end, fitted to the terminal as it is at every frame. */
export async function runList(io: ReporterIo, paint: Paint, tasks: ListTask[], concurrent = false): Promise<void> {
  const o = { io, paint };
  const terminal = o.io.terminal;
  const size = (): TerminalSize => terminal?.size() ?? { columns: o.io.columns || 80, rows: 24 };
  const output = new TerminalOutput(o.io, size);
  const logger = new ListrLogger({ useIcons: true, toStderr: [], processOutput: output });
  const rendererOptions = {
    logger,
    collapseSubtasks: false,
    collapseErrors: true,
    showErrorMessage: true,
    formatOutput: "truncate" as const,
    // a group whose phases failed: the cross, not listr's pointer
    icon: { [ListrDefaultRendererLogLevels.FAILED_WITH_FAILED_SUBTASKS]: "✖", [ListrDefaultRendererLogLevels.COMPLETED_WITH_FAILED_SUBTASKS]: "✖" },
    color: o.io.color ? { [ListrDefaultRendererLogLevels.COMPLETED_WITH_FAILED_SUBTASKS]: o.paint.red, [ListrDefaultRendererLogLevels.FAILED_WITH_FAILED_SUBTASKS]: o.paint.red } : noColor,
  };
  // Lines wider than the new width would wrap and the frame could no longer be erased line by line: start it afresh.
  let width = size().columns;
  const stopListening = terminal?.onResize(() => {
    const now = size().columns;
    if (now < width) output.stdout.write(eraseReflowedFrame(output.frame, now));
    width = now;
  });
  // the tasks' wrapper type names the renderer's class, the options its name: the same renderer
  const list = new Listr(
    tasks as never,
    {
      concurrent,
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
  try {
    await list.run();
  } finally {
    stopListening?.();
  }
}
