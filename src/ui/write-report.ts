/**
 * A run's page as one file (`phaseloop report RUN_ID --html`): the page's
 * script and style and the run's view inline, with the files of the phase
 * runs most worth reading (the latest and the failed ones, each cut to its
 * end), so the file opens anywhere — from disk, from a CI artifact — and makes
 * no request. Read-only: a report has no controls.
 */
import { dirname, join } from "node:path";
import process from "node:process";
import { isoNow } from "../host/host.ts";
import type { RunReadHost } from "../records/run-log.ts";
import { VERSION } from "../generated/version.ts";
import { loadPageAsset, reportHtml } from "./page-html.ts";
import { readPhaseFiles, readRunView, type PhaseFiles } from "./read-runs.ts";
import { readRunGraph } from "./run-graph.ts";

/** Phase runs whose files are carried, and how much of each file. */
const LATEST = 60;
const FAILED = 60;
const FILE_MAX = 32 * 1024;

export type ReportResult = { ok: true; html: string } | { ok: false; message: string };

export async function buildRunReport(workdir: string, key: string, host: RunReadHost): Promise<ReportResult> {
  const asset = await loadPageAsset(host.files);
  if (asset === undefined) return { ok: false, message: "the page is not built: run `npm run build` in the phaseloop package" };
  const read = await readRunView(workdir, key, host);
  if (read === undefined) return { ok: false, message: `no run "${key}" in ${join(workdir, ".phaseloop", "runs")}` };
  const graph = await readRunGraph(read.file, read.view.phases, workdir, host.files);
  const runs = read.view.runs.filter((r) => r.dir !== "");
  const chosen = new Set([...runs.slice(-LATEST), ...runs.filter((r) => r.status === "failed").slice(-FAILED)].map((r) => r.dir));
  const phases: Record<string, PhaseFiles> = {};
  for (const dir of chosen) {
    const files = await readPhaseFiles(workdir, key, dir, host.files, FILE_MAX);
    if (files) phases[dir] = files;
  }
  const data = { key, run: { view: read.view, live: false, graph, problem: read.problem ?? null }, phases, generated_at: isoNow(host.clock), version: VERSION };
  return { ok: true, html: reportHtml(asset, data, `phaseloop run ${key}`) };
}

/** Writes the report whole or not at all (a temporary file renamed over). */
export async function writeRunReport(workdir: string, key: string, file: string, host: RunReadHost): Promise<ReportResult> {
  const built = await buildRunReport(workdir, key, host);
  if (!built.ok) return built;
  const temp = join(dirname(file), `.${process.pid}.report.tmp`);
  host.files.writeText(temp, built.html);
  host.files.rename(temp, file);
  return built;
}
