import type { Reporter } from "../run/run-events.ts";
import type { TextSink } from "./reporter-io.ts";

/**
 * A reporter whose lines are gathered over one turn of the event loop and
 * written at once: the events of a transition arrive together, and one write
 * costs what one line does. `close` writes what is left.
 */
export function batchOutput(stdout: TextSink, create: (sink: TextSink) => Reporter): Reporter {
  let pending = "";
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending === "") return;
    const text = pending;
    pending = "";
    stdout.write(text);
  };
  const reporter = create({
    write(chunk: string): boolean {
      pending += chunk;
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
      return true;
    },
  });
  return {
    onEvent: (event) => reporter.onEvent(event),
    async close(): Promise<void> {
      await reporter.close();
      flush();
    },
  };
}
