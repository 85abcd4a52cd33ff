/**
 * Before a run with lanes starts: the workdir must be a git repository with a
 * commit, and the target (the branch checked out, or `--into BRANCH`) clean, so
 * that merging never mixes with the user's own edits. Then the target is made
 * ready: the workdir itself, or a worktree of phaseloop's own for another branch.
 */
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import type { LanesState } from "../machine/types.ts";
import { addWorktree, branchExists, gitSync, readRepo } from "./lane-git.ts";

export type LanesCheck = { ok: true; current: string | null; head: string } | { ok: false; notGit: boolean; message: string };

export function checkLanes(host: Host, workdir: string, parallel: number, into: string | undefined): LanesCheck {
  const repo = readRepo(host, workdir);
  if (!repo) return { ok: false, notGit: true, message: `parallel: ${parallel} needs a git repository (each lane is a git worktree), and ${workdir} is not in one; run "git init" and commit, or run with --parallel 1` };
  if (!repo.head) return { ok: false, notGit: false, message: `the repository at ${repo.root} has no commit yet; lanes branch from one: commit first, or run with --parallel 1` };
  if (into !== undefined) {
    if (!gitSync(host, workdir, "check-ref-format", "--branch", into).ok) return { ok: false, notGit: false, message: `--into "${into}" is not a valid branch name` };
    if (into !== repo.branch) return { ok: true, current: repo.branch, head: repo.head };
  }
  if (repo.branch === null) return { ok: false, notGit: false, message: `the workdir is on a detached HEAD: lanes merge into a branch; check one out, or name one with --into BRANCH` };
  if (repo.dirty.length > 0) {
    const files = repo.dirty.slice(0, 5).join(", ") + (repo.dirty.length > 5 ? ` (and ${repo.dirty.length - 5} more)` : "");
    return { ok: false, notGit: false, message: `the workdir has uncommitted changes (${files}); lanes merge into ${repo.branch}, which must be clean: commit or stash them first, name another branch with --into BRANCH, or run with --parallel 1` };
  }
  return { ok: true, current: repo.branch, head: repo.head };
}

/** The target branch checked out somewhere phaseloop can merge into: the workdir, or a worktree of its own (the branch made from HEAD if it is new). */
export async function openTarget(host: Host, workdir: string, runId: string, parallel: number, current: string | null, into: string | undefined): Promise<{ ok: true; lanes: LanesState } | { ok: false; message: string }> {
  const target = into ?? current!;
  if (target === current) return { ok: true, lanes: { parallel, into: target, targetDir: workdir, lanes: [] } };
  const dir = join(workdir, ".phaseloop", "lanes", runId, "_into");
  const base = (await branchExists(host, workdir, target)) ? target : "HEAD";
  const made = await addWorktree(host, workdir, dir, target, base);
  if (!made.ok) return { ok: false, message: `cannot check out --into ${target} for merging: ${made.err.split("\n")[0]}` };
  return { ok: true, lanes: { parallel, into: target, targetDir: dir, lanes: [] } };
}
