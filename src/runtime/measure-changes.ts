/**
 * Measured progress: which files changed in the workdir between two moments,
 * never what the agent claims. In git a baseline is an index file of
 * phaseloop's own under `.phaseloop/measure/` matching the work tree at that
 * moment (untracked files included, ignored ones not), and a later measure is
 * `git status` against it: the user's index and object store are never
 * written. Elsewhere a baseline is a file snapshot. Each baseline is compared
 * with the present, not with HEAD: changes from earlier iterations do not
 * count again.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { diffSnapshots, snapshotFiles } from "./file-snapshot.ts";
import { findRepo, restoreFromIndex, worktreeChanges, writeSlotIndex } from "./private-git.ts";

const SKIP_DIRS = new Set([".git", "node_modules", ".phaseloop"]);

export type Baseline =
  | { kind: "git"; index: string; root: string; prefix: string; gitDir: string; commonDir: string }
  | { kind: "snapshot"; files: Record<string, string> };

/** The repository root and the workdir's path inside it, or undefined outside git. */
export function gitRootOf(workdir: string): { root: string; prefix: string } | undefined {
  const repo = findRepo(workdir);
  return repo && { root: repo.root, prefix: repo.prefix };
}

/**
 * The workdir as it is now. `slot` names the baseline's use ("iteration",
 * "phase"): a new baseline in a slot ends the previous one of that slot.
 */
export function takeBaseline(workdir: string, slot = "iteration"): Baseline {
  const repo = findRepo(workdir);
  if (repo) {
    const index = writeSlotIndex(workdir, repo, slot);
    if (index) return { kind: "git", index, ...repo };
  }
  return { kind: "snapshot", files: snapshotFiles(workdir, { skip: SKIP_DIRS }) };
}

/** Files changed (added, modified, deleted) since the baseline, relative to the workdir, sorted. */
export function changesSince(workdir: string, baseline: Baseline): string[] {
  if (baseline.kind === "git") return worktreeChanges(workdir, baseline, baseline.index)?.changed ?? [];
  return diffSnapshots(baseline.files, snapshotFiles(workdir, { skip: SKIP_DIRS }));
}

/**
 * Restore paths to their baseline; returns the paths it could not restore. In
 * git every path can be (the baseline's index holds its content); outside git
 * the baseline holds hashes, not contents, so only files created since can be
 * undone (by removing them).
 */
export function revertPaths(workdir: string, baseline: Baseline, paths: string[]): string[] {
  if (baseline.kind === "git") return restoreFromIndex(workdir, baseline, baseline.index, paths);
  const failed: string[] = [];
  for (const p of paths) {
    if (baseline.files[p] !== undefined) {
      failed.push(p);
      continue;
    }
    try {
      rmSync(join(workdir, p), { force: true });
    } catch {
      failed.push(p);
    }
  }
  return failed;
}
