/** Runs' summary.md files as MCP resources: phaseloop://runs/RUN_ID/summary. */
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { findRun } from "../control/read-runs.ts";
import { runDir } from "../records/run-log.ts";
import { listRunIds } from "../runtime/run-store.ts";
import { ControlError } from "../control/control-error.ts";

export const SUMMARY_TEMPLATE = "phaseloop://runs/{run_id}/summary";

export function summaryUri(runId: string): string {
  return `phaseloop://runs/${runId}/summary`;
}

export interface SummaryResource {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: "text/markdown";
}

/** The runs that have a summary, newest first. */
export async function listSummaries(workdir: string, files: HostFiles = nodeFiles): Promise<SummaryResource[]> {
  const ids = (await listRunIds(workdir)).reverse();
  return ids
    .filter((id) => files.exists(join(runDir(workdir, id), "summary.md")))
    .map((id) => ({ uri: summaryUri(id), name: `run-${id}-summary`, title: `Summary of run ${id}`, description: `summary.md of phaseloop run ${id}: its outcome, iterations, phases, changes and questions`, mimeType: "text/markdown" as const }));
}

/** A summary's text by its URI. */
export async function readSummary(workdir: string, uri: string, files: HostFiles = nodeFiles): Promise<{ uri: string; mimeType: "text/markdown"; text: string }> {
  const m = /^phaseloop:\/\/runs\/([^/]+)\/summary$/.exec(uri);
  if (!m) throw new ControlError("BAD_ARGUMENT", `"${uri}" is not a resource of phaseloop (phaseloop://runs/RUN_ID/summary)`);
  const id = await findRun(workdir, decodeURIComponent(m[1]!));
  try {
    return { uri: summaryUri(id), mimeType: "text/markdown", text: files.readText(join(runDir(workdir, id), "summary.md")) };
  } catch {
    throw new ControlError("RUN_STATE_INVALID", `run ${id} has no summary yet`, { hint: "a run writes summary.md when it ends, stops or waits for an answer; wait_for_run waits for that" });
  }
}
