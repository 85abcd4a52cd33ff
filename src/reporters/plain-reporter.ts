import type { Reporter, RunEvent } from "../run/run-events.ts";
import { formatEventLine, paintFor, plural } from "../run/format-event-line.ts";
import type { TextSink } from "./reporter-io.ts";
import { runFolderLines } from "./run-folder.ts";

export { formatEventLine } from "../run/format-event-line.ts";
export type { EventLineOptions } from "../run/format-event-line.ts";

export interface PlainReporterOptions {
  color: boolean;
  utc?: boolean;
  /** Output lines of a phase run shown as they come (default 10). */
  outputHead?: number;
  /** Last output lines of a phase run shown when it ends (default 10). */
  outputTail?: number;
}

/**
 * One time-stamped line per event, for CI logs and pipes. Agent output is
 * indented under its phase and capped per phase run: the first lines live,
 * the last lines when the phase ends (where errors usually are), and a
 * pointer to the phase logs, which keep everything.
 */
export function createPlainReporter(stdout: TextSink, options: PlainReporterOptions): Reporter {
  const head = Math.max(0, options.outputHead ?? 10);
  const tailCap = Math.max(0, options.outputTail ?? 10);
  const lineOptions = { color: options.color, utc: options.utc };
  const paint = paintFor(options.color);

  // Output belongs to the phase run in flight; phase.output carries no sequence number.
  let runId = "";
  let workdir: string | null = null;
  let dir: string | null = null;
  let shown = 0;
  let omitted = 0;
  let tail: RunEvent[] = [];

  const print = (event: RunEvent): void => {
    stdout.write(`${formatEventLine(event, lineOptions)}\n`);
  };

  const flushOutput = (): void => {
    if (omitted > 0) {
      const where = dir === null ? "the phase logs" : `.phaseloop/runs/${runId}/phases/${dir}/`;
      stdout.write(`         ${paint.dim(`│ … ${plural(omitted, "line")} not shown (full output in ${where})`)}\n`);
    }
    for (const event of tail) print(event);
    shown = 0;
    omitted = 0;
    tail = [];
  };

  return {
    onEvent(event: RunEvent): void {
      runId = event.run;
      if (event.type === "phase.output") {
        omitted += event.dropped ?? 0;
        if (shown < head) {
          shown += 1;
          print(event);
          return;
        }
        tail.push(event);
        if (tail.length > tailCap) {
          tail.shift();
          omitted += 1;
        }
        return;
      }
      // Whatever comes next closes the phase run's output.
      if (shown > 0 || tail.length > 0 || omitted > 0) flushOutput();
      if (event.type === "phase.started") dir = event.dir;
      if (event.type === "run.started") workdir = event.workdir;
      if (event.type === "run.resumed") workdir = event.workdir ?? workdir;
      print(event);
      if (event.type === "run.finished") for (const line of runFolderLines(workdir, event.run)) stdout.write(`         ${paint.dim(line)}\n`);
    },
    close(): Promise<void> {
      flushOutput();
      return Promise.resolve();
    },
  };
}
