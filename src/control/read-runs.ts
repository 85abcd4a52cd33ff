/**
 * Reading runs back: the list of a workdir's runs and where one stands,
 * through the same readers as `phaseloop runs --json` and `status --json`,
 * so every face of phaseloop says the same about a run.
 */
import { join } from "node:path";
import type { Host, HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { nodeHost } from "../host/node-host.ts";
import { listRuns as listRunEntries, type RunListEntry } from "../records/list-runs.ts";
import { runDir } from "../records/run-log.ts";
import { readRunStatus, UnreadableLogError, type RunStatus } from "../records/run-status.ts";
import { selectRun } from "../records/select-run.ts";
import { STARTED_VIA, type StartedVia } from "../run/run-info.ts";
import { ControlError } from "./control-error.ts";
import { resolveWorkdir } from "./workdir-path.ts";

export type { RunListEntry, RunStatus, StartedVia };

/** The runs of a workdir, newest first (what `phaseloop runs --json` prints). */
export async function listRuns(workdir: string, host: Host = nodeHost): Promise<RunListEntry[]> {
  return listRunEntries(resolveWorkdir(workdir, undefined, host.files), host);
}

/**
 * The id of a run of the workdir: an exact id, or a unique prefix of one;
 * the latest run when none is given. Only ids found in the runs folder are
 * ever returned, so an id can never name a path.
 */
export async function findRun(workdir: string, runId: string | undefined, host: Host = nodeHost): Promise<string> {
  if (runId !== undefined && (typeof runId !== "string" || runId === "")) throw new ControlError("BAD_ARGUMENT", "the run id is empty");
  const selection = await selectRun(workdir, runId, host.files);
  if (!selection.ok) throw new ControlError("UNKNOWN_RUN", selection.message, selection.hint === undefined ? {} : { hint: selection.hint });
  return selection.runId;
}

/** Where a run stands (what `phaseloop status RUN_ID --json` prints). */
export async function getRun(workdir: string, runId: string | undefined, host: Host = nodeHost): Promise<RunStatus> {
  const dir = resolveWorkdir(workdir, undefined, host.files);
  const id = await findRun(dir, runId, host);
  try {
    return await readRunStatus(dir, id, host);
  } catch (error) {
    if (!(error instanceof UnreadableLogError)) throw error;
    throw new ControlError("RUN_STATE_INVALID", `${error.file}: ${error.message}`, { hint: `the run's event log cannot be read; its other files are under ${runDir(dir, id)}` });
  }
}

/** Who started a run, as its run.json records it; null for a run from before that was recorded. */
export async function readStartedVia(workdir: string, runId: string, files: HostFiles = nodeFiles): Promise<StartedVia | null> {
  try {
    const info = JSON.parse(files.readText(join(runDir(workdir, runId), "run.json"))) as { started_via?: unknown };
    return (STARTED_VIA as readonly unknown[]).includes(info.started_via) ? (info.started_via as StartedVia) : null;
  } catch {
    return null;
  }
}
