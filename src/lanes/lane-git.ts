/**
 * The git work of lanes, done by phaseloop itself (never by an agent, whose
 * sandbox cannot write the repository): worktrees and branches, the lane's
 * commit, the merge into the target branch, the rebase after a conflict.
 * Commits are made as "phaseloop" through the environment; the user's git
 * config and hooks are neither changed nor run.
 */
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import process from "node:process";

/** Settings for phaseloop's own commands: no hooks, no signing prompt, no automatic gc. */
const SAFE = ["-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "merge.autoStash=false", "-c", "rebase.autoStash=false", "-c", "core.editor=true"];

const IDENTITY = { GIT_AUTHOR_NAME: "phaseloop", GIT_AUTHOR_EMAIL: "phaseloop@localhost", GIT_COMMITTER_NAME: "phaseloop", GIT_COMMITTER_EMAIL: "phaseloop@localhost", GIT_TERMINAL_PROMPT: "0", GIT_EDITOR: "true" };

export interface Git {
  ok: boolean;
  out: string;
  err: string;
}

export function git(cwd: string, ...args: string[]): Git {
  const env: Record<string, string | undefined> = { ...process.env, ...IDENTITY };
  // a lane's git runs in its own worktree: variables pointing elsewhere would send it there
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR"]) delete env[name];
  const r = spawnSync("git", [...SAFE, ...args], { cwd, env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  return { ok: r.status === 0, out: (r.stdout ?? "").trimEnd(), err: (r.stderr ?? "").trim() || (r.error ? String(r.error.message) : "") };
}

/** The repository at `workdir`: its top, the branch checked out (null when detached), HEAD, and the tracked files changed. */
export function readRepo(workdir: string): { root: string; branch: string | null; head: string | null; dirty: string[] } | undefined {
  const top = git(workdir, "rev-parse", "--show-toplevel");
  if (!top.ok) return undefined;
  const branch = git(workdir, "symbolic-ref", "--quiet", "--short", "HEAD");
  const head = git(workdir, "rev-parse", "--verify", "--quiet", "HEAD");
  const status = git(workdir, "status", "--porcelain=v1", "--untracked-files=no", "--ignore-submodules=all");
  const dirty = status.out.split("\n").filter(Boolean).map((l) => l.slice(3));
  return { root: top.out, branch: branch.ok ? branch.out : null, head: head.ok ? head.out : null, dirty };
}

export function revParse(cwd: string, rev: string): string | null {
  const r = git(cwd, "rev-parse", "--verify", "--quiet", `${rev}^{commit}`);
  return r.ok ? r.out : null;
}

export function branchExists(cwd: string, branch: string): boolean {
  return git(cwd, "show-ref", "--verify", "--quiet", `refs/heads/${branch}`).ok;
}

/**
 * A worktree at `path` on `branch`: a new branch from `base`, or the branch
 * as it is when it exists (a lane set up again after a crash). A worktree
 * already there and on the branch is kept.
 */
export function addWorktree(repo: string, path: string, branch: string, base: string): Git {
  if (existsSync(path)) {
    if (git(path, "symbolic-ref", "--quiet", "--short", "HEAD").out === branch) return { ok: true, out: "", err: "" };
    rmSync(path, { recursive: true, force: true });
    git(repo, "worktree", "prune");
  }
  const made = git(repo, "worktree", "add", "--quiet", "-b", branch, path, base);
  // the branch is there already: a lane set up again after a crash
  if (!made.ok && branchExists(repo, branch)) {
    git(repo, "worktree", "prune");
    return git(repo, "worktree", "add", "--quiet", path, branch);
  }
  return made;
}

/** Remove a worktree (its files and git's record of it); its branch stays. */
export function removeWorktree(repo: string, path: string): void {
  const r = git(repo, "worktree", "remove", "--force", "--force", path);
  if (r.ok && !existsSync(path)) return;
  rmSync(path, { recursive: true, force: true });
  git(repo, "worktree", "prune");
}

/** Commit everything the lane changed as one commit; whether there was anything to commit. */
export function commitAll(worktree: string, message: string): { ok: true; committed: boolean } | { ok: false; message: string } {
  const add = git(worktree, "add", "--all", "--", ".");
  if (!add.ok) return { ok: false, message: `git add failed: ${add.err}` };
  const c = git(worktree, "commit", "--quiet", "--no-verify", "-m", message);
  if (c.ok) return { ok: true, committed: true };
  // nothing staged: git says so and exits 1
  if (git(worktree, "diff", "--cached", "--quiet").ok) return { ok: true, committed: false };
  return { ok: false, message: `git commit failed: ${c.err || c.out}` };
}

export type MergeResult = { kind: "merged"; commit: string } | { kind: "conflict"; files: string[] } | { kind: "failed"; message: string };

/** Merge `branch` into the branch checked out at `targetDir` (a merge commit, or nothing to do when it is already in). */
export function mergeBranch(targetDir: string, branch: string, message: string): MergeResult {
  // a branch merged already (before a crash) is "Already up to date": no new commit
  const m = git(targetDir, "merge", "--no-ff", "--no-verify", "--no-edit", "-m", message, branch);
  if (m.ok) return { kind: "merged", commit: revParse(targetDir, "HEAD") ?? "" };
  const files = unmerged(targetDir);
  git(targetDir, "merge", "--abort");
  if (files.length > 0) return { kind: "conflict", files };
  return { kind: "failed", message: (m.err || m.out).split("\n").slice(0, 3).join(" ") };
}

/** Rebase the lane's branch (checked out in `worktree`) onto `onto`. */
export function rebaseOnto(worktree: string, onto: string): MergeResult {
  const r = git(worktree, "rebase", "--quiet", "--no-verify", onto);
  if (r.ok) return { kind: "merged", commit: revParse(worktree, "HEAD") ?? "" };
  const files = unmerged(worktree);
  git(worktree, "rebase", "--abort");
  if (files.length > 0) return { kind: "conflict", files };
  return { kind: "failed", message: (r.err || r.out).split("\n").slice(0, 3).join(" ") };
}

function unmerged(cwd: string): string[] {
  return git(cwd, "diff", "--name-only", "--diff-filter=U").out.split("\n").filter(Boolean);
}

export function deleteBranch(repo: string, branch: string): void {
  git(repo, "branch", "--quiet", "-D", branch);
}
