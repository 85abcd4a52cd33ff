import type { Reporter, RunEvent } from "../run/run-events.ts";
import { batchOutput } from "./batch-output.ts";
import type { ReporterIo, TextSink } from "./reporter-io.ts";

export type ReporterKind = "auto" | "tty" | "plain" | "json";

export const REPORTER_KINDS: readonly ReporterKind[] = ["auto", "tty", "plain", "json"];

/**
 * `auto` picks the listr2 view on an interactive terminal and plain lines
 * elsewhere: off a TTY, under CI (a CI log keeps every frame of an
 * animation), on a dumb terminal, and on a terminal that reports no width
 * (the view would be cut to nothing).
 */
export function resolveReporterKind(kind: ReporterKind, io: Pick<ReporterIo, "isTTY" | "env" | "columns">): Exclude<ReporterKind, "auto"> {
  if (kind !== "auto") return kind;
  const ci = io.env.CI;
  const inCi = ci !== undefined && ci !== "" && ci !== "0" && ci.toLowerCase() !== "false";
  if (!io.isTTY || inCi || io.env.TERM === "dumb" || io.columns === 0) return "plain";
  return "tty";
}

/**
 * Builds the reporter for a run. Each kind is imported on demand, so
 * `--reporter json` or a piped run never loads listr2. The reporter is
 * returned at once: events that arrive while its module loads are queued and
 * replayed in order, and `close()` waits for both.
 */
export function createReporter(kind: ReporterKind, io: ReporterIo): Reporter {
  return deferReporter(loadReporter(resolveReporterKind(kind, io), io));
}

async function loadReporter(kind: Exclude<ReporterKind, "auto">, io: ReporterIo): Promise<Reporter> {
  // under GitHub Actions every kind also speaks the runner's language (github-actions.ts)
  const github = io.env.GITHUB_ACTIONS === "true" ? (await import("./github-actions.ts")).withGithubActions : null;
  const speak = (reporter: Reporter, commands: TextSink) => (github ? github(reporter, commands, io.env) : reporter);
  switch (kind) {
    case "json": {
      const { createJsonReporter } = await import("./json-reporter.ts");
      // stdout stays pure NDJSON
      return batchOutput(io.stdout, (sink) => speak(createJsonReporter(sink), io.stderr));
    }
    case "plain": {
      const { createPlainReporter } = await import("./plain-reporter.ts");
      return batchOutput(io.stdout, (sink) => speak(createPlainReporter(sink, { color: io.color }), sink));
    }
    case "tty": {
      const { createTtyReporter } = await import("./tty-reporter.ts");
      return speak(createTtyReporter(io), io.stdout);
    }
  }
}

/** A reporter that forwards to one still being built, keeping event order. */
export function deferReporter(pending: Promise<Reporter>): Reporter {
  let target: Reporter | null = null;
  let failure: unknown = null;
  const queue: RunEvent[] = [];
  const ready = pending.then(
    (reporter) => {
      target = reporter;
      for (const event of queue.splice(0)) reporter.onEvent(event);
    },
    (error: unknown) => {
      failure = error;
    },
  );
  return {
    onEvent(event: RunEvent): void {
      if (target !== null) target.onEvent(event);
      else if (failure === null) queue.push(event);
    },
    async close(): Promise<void> {
      await ready;
      if (failure !== null) throw failure;
      await target?.close();
    },
  };
}

/** Hands every event to several reporters (a live view and a file, say). */
export function combineReporters(reporters: readonly Reporter[]): Reporter {
  return {
    onEvent(event: RunEvent): void {
      for (const reporter of reporters) reporter.onEvent(event);
    },
    async close(): Promise<void> {
      await Promise.all(reporters.map((r) => r.close()));
    },
  };
}
