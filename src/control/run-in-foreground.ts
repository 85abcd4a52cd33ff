/**
 * The CLI's `run` and `resume`: the run goes on in this process, with the
 * terminal's reporter, until it ends. The same preparation and record as a
 * detached start (a detached start is this, in a process of its own), with
 * `started_via` written into run.json.
 */
import { resumeRun as resumeHere, type ResumeOptions } from "../run/resume-run.ts";
import { startRun as startHere, type StartOptions, type StartOutcome } from "../run/start-run.ts";
import { STARTED_VIA, type StartedVia } from "../run/run-info.ts";

export type { ResumeOptions, StartOptions, StartOutcome };

/** Starts a run here and runs it to its end; `startedVia` defaults to the command line. */
export function runInForeground(o: StartOptions): Promise<StartOutcome> {
  return startHere({ ...o, startedVia: o.startedVia ?? "cli" });
}

/** Resumes a run here (with `answer`, as `resume --answer`) and runs it to its end. */
export function resumeInForeground(o: ResumeOptions): Promise<StartOutcome> {
  return resumeHere(o);
}

/** The options the control layer gives `phaseloop run` when it starts a run detached; not for people, so not in the usage. */
export const CONTROL_FLAGS = { runId: "--run-id", startedVia: "--started-via" } as const;

/** `run`'s arguments with the control layer's own options taken out and checked. */
export function takeControlFlags(argv: readonly string[]): { ok: true; rest: string[]; runId?: string; startedVia?: StartedVia } | { ok: false; message: string } {
  const rest: string[] = [];
  let runId: string | undefined;
  let startedVia: StartedVia | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      rest.push(...argv.slice(i));
      break;
    }
    if (arg === CONTROL_FLAGS.runId) {
      runId = argv[++i];
      if (runId === undefined || !isRunIdForm(runId)) return { ok: false, message: `${CONTROL_FLAGS.runId} needs an id of the form 20261122-130512-k3f9, got "${runId ?? ""}"` };
    } else if (arg === CONTROL_FLAGS.startedVia) {
      const v = argv[++i];
      if (v === undefined || !isStartedVia(v)) return { ok: false, message: `${CONTROL_FLAGS.startedVia} needs cli, mcp or ui, got "${v ?? ""}"` };
      startedVia = v;
    } else rest.push(arg);
  }
  return { ok: true, rest, ...(runId !== undefined ? { runId } : {}), ...(startedVia !== undefined ? { startedVia } : {}) };
}

/** Whether a text names who starts a run. */
export function isStartedVia(value: string): value is StartedVia {
  return (STARTED_VIA as readonly string[]).includes(value);
}

/** A run id a caller may choose: the form phaseloop gives them (20261122-130512-k3f9). */
export function isRunIdForm(value: string): boolean {
  return /^\d{8}-\d{6}-[a-z0-9]{4}$/.test(value);
}
