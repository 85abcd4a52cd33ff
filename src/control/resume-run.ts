/**
 * Resuming a run, and answering the question it waits on, as a process of
 * its own: an ordinary `phaseloop resume RUN_ID [--answer TEXT]` started
 * detached, handed back once it holds the workdir's lock (or has already
 * ended). What would make the resume refuse at once is checked here first.
 */
import process from "node:process";
import type { Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { readLock } from "../records/run-log.ts";
import type { RunStatus } from "../records/run-status.ts";
import { ControlError } from "./control-error.ts";
import { launchDetached, outputLogPath } from "./launch.ts";
import { getRun } from "./read-runs.ts";
import { busyInstead, refuseBusy, untilStarted } from "./start-run.ts";
import { resolveWorkdir } from "./workdir-path.ts";

export interface ResumeRunOptions {
  env?: Record<string, string | undefined>;
  /** The program that starts phaseloop (default: this one). */
  command?: string[];
  /** How long to wait for the resumed run to take the lock (default 60 s). */
  startTimeoutMs?: number;
  /** Files, processes and the clock: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export interface ResumedRun {
  runId: string;
  pid: number;
  /** Where the run's process writes what it prints. */
  output: string;
}

/** As `phaseloop resume RUN_ID`, detached. */
export async function resumeRun(workdir: string, runId: string, options: ResumeRunOptions = {}): Promise<ResumedRun> {
  const host = options.host ?? nodeHost;
  const dir = resolveWorkdir(workdir, undefined, host.files);
  const status = await resumable(dir, runId, host);
  return launchResume(dir, status.run, [], options);
}

/** As `phaseloop resume RUN_ID --answer TEXT`, detached: the run goes on with the answer. */
export async function answerQuestion(workdir: string, runId: string, text: string, options: ResumeRunOptions = {}): Promise<ResumedRun> {
  const host = options.host ?? nodeHost;
  const dir = resolveWorkdir(workdir, undefined, host.files);
  if (typeof text !== "string" || text.trim() === "") throw new ControlError("BAD_ARGUMENT", "the answer is empty");
  if (text.includes("\0")) throw new ControlError("BAD_ARGUMENT", "the answer holds a NUL character");
  const status = await resumable(dir, runId, host);
  if (status.state !== "awaiting answer") throw new ControlError("NOT_AWAITING_ANSWER", `run ${status.run} is not waiting for an answer (${status.state})`, status.resume ? { hint: "resume it without an answer (resume_run)" } : {});
  return launchResume(dir, status.run, [`--answer=${text}`], options);
}

/** The run's status, when it can be resumed now. */
async function resumable(dir: string, runId: string, host: Host): Promise<RunStatus> {
  const status = await getRun(dir, runId, host);
  if (status.state === "running") throw new ControlError("RUN_RUNNING", `run ${status.run} is running`, { hint: "wait for it (wait_for_run) or stop it (stop_run)" });
  if (status.outcome !== null) throw new ControlError("RUN_FINISHED", `run ${status.run} has finished: ${status.headline}`, { hint: "start a new run (start_run)" });
  if (status.problems.length > 0) {
    const p = status.problems[0]!;
    throw new ControlError("RUN_STATE_INVALID", `run ${status.run} cannot be resumed as it is: ${p.file}: ${p.message}`, { hint: p.hint });
  }
  await refuseBusy(dir, status.run, host);
  return status;
}

async function launchResume(dir: string, runId: string, extra: string[], o: ResumeRunOptions): Promise<ResumedRun> {
  const host = o.host ?? nodeHost;
  const launched = launchDetached({ args: ["resume", runId, "--workdir", dir, "--reporter", "plain", ...extra], workdir: dir, runId, env: o.env ?? process.env, host, ...(o.command ? { command: o.command } : {}) });
  const holdsLock = async () => {
    const lock = await readLock(dir, host.files);
    return lock !== null && lock.run === runId && lock.pid === launched.pid;
  };
  await untilStarted(launched, holdsLock, o.startTimeoutMs ?? 60_000, `the resume of run ${runId}`, host.clock).catch((error: unknown) => {
    // a resume that ended at once having done its work (asked again, finished, was stopped) did start; exit 2 is a refusal
    if (error instanceof ControlError && error.code === "START_FAILED" && launched.exitCode !== undefined && launched.exitCode !== null && launched.exitCode !== 2) return;
    busyInstead(error);
  });
  return { runId, pid: launched.pid, output: outputLogPath(dir, runId) };
}
