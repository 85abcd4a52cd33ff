/**
 * The artifacts folder of a run, `.phaseloop/runs/RUN_ID/artifacts`: files the
 * phases of one run pass to each other (`{{ run.artifacts }}`,
 * `$PHASELOOP_ARTIFACTS`). Every phase may write it, inside the OS sandbox too;
 * it is phaseloop's state, so change measurement and the write scope never see
 * it, and it never lands in the user's tree.
 */
import { join, relative } from "node:path";
import type { HostFiles } from "../host/host.ts";
import type { ToolSetSpec } from "../pipeline/spec.ts";
import { makePhaseloopDirOn } from "../runtime/run-store.ts";
import { artifactsRel } from "../pipeline/artifacts-glob.ts";

export { artifactsRel, isArtifactsGlob } from "../pipeline/artifacts-glob.ts";

/** The folder, absolute (created if need be, in a `.phaseloop` that keeps itself out of git). */
export function ensureArtifacts(workdir: string, runId: string, files: HostFiles): string {
  const dir = join(workdir, artifactsRel(runId));
  // every phase asks: a folder already there (not a link a phase left) is taken as it is
  return files.lstat(dir)?.isDirectory() ? dir : makePhaseloopDirOn(files, workdir, "runs", runId, "artifacts");
}

/** A tool set that may also write (and read) the run's artifacts folder. */
export function withArtifacts(tools: ToolSetSpec | undefined, runId: string): ToolSetSpec | undefined {
  if (!tools) return undefined;
  const glob = `${artifactsRel(runId)}/**`;
  return { ...tools, write: [...(tools.write ?? []), glob] };
}

export interface ArtifactFile {
  path: string;
  bytes: number;
}

/** The files in the folder (relative paths, sorted; at most `max`). */
export function listArtifacts(files: HostFiles, workdir: string, runId: string, max = 200): ArtifactFile[] {
  const root = join(workdir, artifactsRel(runId));
  const out: ArtifactFile[] = [];
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = files.readdir(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= max) return;
      const abs = join(dir, name);
      const st = files.lstat(abs);
      if (!st) continue;
      if (st.isDirectory()) walk(abs);
      else out.push({ path: relative(root, abs), bytes: st.size });
    }
  };
  walk(root);
  return out;
}
