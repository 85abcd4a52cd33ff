/**
 * Stopping a run as Ctrl-C does: SIGINT to the process that holds the
 * workdir's lock for it (to its process group when it leads one, as a run
 * started by the control layer does). The run saves its checkpoint, stops its
 * phase's processes and exits 130; it can be resumed.
 */
import type { Host, HostFiles } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import process from "node:process";
import { isRunLive, readLock } from "../records/run-log.ts";
import type { RunStatus } from "../records/run-status.ts";
import { machineName } from "../runtime/run-lock.ts";
import { ControlError } from "./control-error.ts";
import { findRun, getRun } from "./read-runs.ts";
import { resolveWorkdir } from "./workdir-path.ts";

export interface StopResult {
  run: string;
  /** Whether the run's process ended within the wait (it saves its state first). */
  stopped: boolean;
  status: RunStatus;
}

export interface StopOptions {
  /** How long to wait for the run to save and end (default 30 s). */
  waitMs?: number;
  /** Files and the clock: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export async function stopRun(workdir: string, runId: string, options: StopOptions = {}): Promise<StopResult> {
  const on = options.host ?? nodeHost;
  const dir = resolveWorkdir(workdir, undefined, on.files);
  const id = await findRun(dir, runId, on);
  const lock = await readLock(dir, on.files);
  const host = machineName();
  if (lock === null || lock.run !== id || lock.pid === null || !(await isRunLive(dir, id, host, on))) {
    const status = await getRun(dir, id, on);
    throw new ControlError("RUN_NOT_RUNNING", `run ${id} is not running (${status.state})`, status.resume ? { hint: `it can be resumed (resume_run, or ${status.resume})` } : {});
  }
  if (lock.hostname !== null && lock.hostname !== host) throw new ControlError("RUN_NOT_RUNNING", `run ${id} runs on host ${lock.hostname}; stop it there`);
  const pid = lock.pid;
  // the lock is a file in the workdir: signal only a process that is a phaseloop run
  if (!isPhaseloopRun(on.files, pid)) throw new ControlError("RUN_NOT_RUNNING", `the lock of run ${id} names pid ${pid}, which is not a phaseloop run; nothing was signalled`);
  try {
    process.kill(leadsGroup(on.files, pid) ? -pid : pid, "SIGINT");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
  const deadline = on.clock.now() + (options.waitMs ?? 30_000);
  let stopped = false;
  while (on.clock.now() < deadline) {
    if (!on.processes.alive(pid) || !(await isRunLive(dir, id, host, on))) {
      stopped = true;
      break;
    }
    await on.clock.sleep(50);
  }
  return { run: id, stopped, status: await getRun(dir, id, on) };
}

/** /proc/PID/stat's fields after the command name. */
function statFields(files: HostFiles, pid: number): string[] | undefined {
  try {
    const stat = files.readText(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** Whether the process leads its own process group (a run started detached does). */
function leadsGroup(files: HostFiles, pid: number): boolean {
  const fields = statFields(files, pid);
  return fields !== undefined && Number(fields[2]) === pid;
}

/** Whether the process runs phaseloop's `run` or `resume` (where /proc says; elsewhere, trusted). */
function isPhaseloopRun(files: HostFiles, pid: number): boolean {
  let argv: string[];
  try {
    argv = files.readText(`/proc/${pid}/cmdline`).split("\0");
  } catch {
    return process.platform !== "linux";
  }
  return argv.some((a) => a === "run" || a === "resume") && argv.some((a) => /phaseloop|cli\.(c?js|ts)$/.test(a));
}
