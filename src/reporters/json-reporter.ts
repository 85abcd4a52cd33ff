import type { Reporter, RunEvent } from "../run/run-events.ts";
import type { TextSink } from "./reporter-io.ts";
import { runFolderPath } from "./run-folder.ts";

/**
 * NDJSON on stdout: every event as one line, exactly as the run log holds it,
 * plus the `phase.output` lines the log leaves to the phase directories, and
 * after `run.finished` a `run.folder` line that names where the run's files
 * are, as every reporter ends by naming them.
 */
export function createJsonReporter(stdout: TextSink): Reporter {
  let workdir: string | null = null;
  return {
    onEvent(event: RunEvent): void {
      stdout.write(`${JSON.stringify(event)}\n`);
      if (event.type === "run.started") workdir = event.workdir;
      if (event.type === "run.resumed") workdir = event.workdir ?? workdir;
      if (event.type === "run.finished") {
        const folder = runFolderPath(workdir, event.run);
        stdout.write(`${JSON.stringify({ v: 1, seq: 0, at: event.at, run: event.run, type: "run.folder", folder, summary: `${folder}summary.md` })}\n`);
      }
    },
    close(): Promise<void> {
      return Promise.resolve();
    },
  };
}
