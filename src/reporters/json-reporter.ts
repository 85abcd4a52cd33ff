import type { Reporter, RunEvent } from "../run/run-events.ts";
import type { TextSink } from "./reporter-io.ts";

/**
 * NDJSON on stdout: every event as one line, exactly as the run log holds it,
 * plus the `phase.output` lines the log leaves to the phase directories.
 */
export function createJsonReporter(stdout: TextSink): Reporter {
  return {
    onEvent(event: RunEvent): void {
      stdout.write(`${JSON.stringify(event)}\n`);
    },
    close(): Promise<void> {
      return Promise.resolve();
    },
  };
}
