/** Where a run's files are, as the last lines of every reporter name them. */
import { isAbsolute, join, relative } from "node:path";
import process from "node:process";

/** `.phaseloop/runs/RUN_ID/`, relative to the current directory when it lies below it. */
export function runFolderPath(workdir: string | null, runId: string, cwd = process.cwd()): string {
  const dir = join(workdir ?? cwd, ".phaseloop", "runs", runId);
  const rel = relative(cwd, dir);
  return `${rel === "" || rel.startsWith("..") || isAbsolute(rel) ? dir : rel}/`;
}

/** `run folder: …` and `report: …/summary.md`. */
export function runFolderLines(workdir: string | null, runId: string, cwd?: string): string[] {
  const dir = runFolderPath(workdir, runId, cwd);
  return [`run folder: ${dir}`, `report:     ${dir}summary.md`];
}
