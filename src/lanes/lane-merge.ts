/**
 * The git work at the end of a lane, as the lane scheduler's effects ask for
 * it (machine/lanes.ts): a task its loop finished is committed (one commit
 * naming the task) and merged into the target; after a conflict the lane is
 * rebased onto the target; a lane that does not merge keeps its work on its
 * branch and its worktree goes; a merged lane's worktree and branch go. Each
 * answers with what happened, and every step is safe to repeat after a
 * crash: the checkpoint says `merging` until the merge is recorded.
 */
import type { Host } from "../host/host.ts";
import { conflictReason } from "../machine/lanes.ts";
import type { LaneState } from "../machine/types.ts";
import { branchExists, commitAll, deleteBranch, git, gitLater, mergeBranch, rebaseOnto, removeWorktree, revParse } from "./lane-git.ts";

/**
 * A merged lane's worktree and branch go once nothing else waits for git (the
 * next lane starts first); `done` is called once the worktree is gone, so a
 * crash before leaves it to the next life of the run.
 */
export function tidyLane(host: Host, repo: string, lane: Pick<LaneState, "worktree" | "branch">, done: () => void): void {
  gitLater(host, async (run, runChain) => {
    const worktree = lane.worktree;
    const r = worktree ? await runChain(repo, ["worktree", "remove", "--force", "--force", worktree], ["branch", "--quiet", "-D", lane.branch]) : await run(repo, "branch", "--quiet", "-D", lane.branch);
    if (!r.ok || (worktree && host.files.exists(worktree))) {
      if (worktree) await removeWorktree(host, repo, worktree, run);
      await deleteBranch(host, repo, lane.branch, run);
    }
    done();
  });
}

/**
 * A merge or rebase a crash left half done is undone: the step runs again from
 * its start. The index lock of a git command killed with phaseloop goes too (the
 * run's lock says no other phaseloop works here).
 */
export async function abortUnfinishedMerge(host: Host, dir: string): Promise<void> {
  const lock = (await git(host, dir, "rev-parse", "--path-format=absolute", "--git-path", "index.lock")).out;
  if (lock && host.files.exists(lock)) host.files.remove(lock, { force: true });
  if ((await git(host, dir, "rev-parse", "--quiet", "--verify", "MERGE_HEAD")).ok) await git(host, dir, "merge", "--abort");
  for (const d of ["rebase-merge", "rebase-apply"]) {
    const path = (await git(host, dir, "rev-parse", "--path-format=absolute", "--git-path", d)).out;
    if (path && host.files.exists(path)) await git(host, dir, "rebase", "--abort");
  }
}

/** An event a lane's git work reports (the run numbers it into its log). */
export type LaneNote = { type: "note"; level: "warning"; message: string } | { type: "lane.blocked"; task: string; branch: string; status: "blocked" | "stopped"; reason: string; conflicts: string[] };

export interface MergeLane {
  lane: LaneState;
  repo: string;
  targetDir: string;
  into: string;
  title: string;
  runId: string;
  /** A crash left the merge: what git left half done is undone first. */
  resumed: boolean;
  /** With a JSON task source and write_back: write the task's new state into it in `dir`, and name the file. */
  writeBack?: (dir: string) => string | undefined;
}

export type MergeOutcome = { kind: "merged"; commit: string } | { kind: "conflict"; files: string[] } | { kind: "failed"; reason: string };

/** Commit the lane's work and merge its branch into the target. */
export async function mergeLane(host: Host, a: MergeLane): Promise<MergeOutcome> {
  const { lane } = a;
  if (a.resumed && lane.worktree && host.files.exists(lane.worktree)) await abortUnfinishedMerge(host, lane.worktree);
  if (lane.worktree && host.files.exists(lane.worktree)) {
    const c = await commitAll(host, lane.worktree, `${a.title}\n\nTask ${lane.task}, done and verified by phaseloop run ${a.runId}.`);
    if (!c.ok) return { kind: "failed", reason: c.message };
  }
  // the branch goes only once merged: a crash after that can leave a lane `merging` without one
  const gone = a.resumed && !(await branchExists(host, a.repo, lane.branch));
  const m = gone ? { kind: "merged" as const, commit: (await revParse(host, a.targetDir, "HEAD")) ?? "" } : await mergeBranch(host, a.targetDir, lane.branch, `Merge task ${lane.task}: ${a.title}`, a.writeBack && (() => a.writeBack!(a.targetDir)));
  if (m.kind === "failed") return { kind: "failed", reason: `cannot merge into ${a.into}: ${m.message}` };
  return m;
}

/** Rebase the lane onto the target as it is now, after a conflict: clean, or why not (with the files that conflicted). */
export async function rebaseLane(host: Host, lane: LaneState, into: string): Promise<{ ok: true } | { ok: false; reason: string; conflicts?: string[] }> {
  const r = await rebaseOnto(host, lane.worktree!, into);
  if (r.kind === "rebased") return { ok: true };
  if (r.kind === "conflict") return { ok: false, reason: conflictReason(into, r.files), conflicts: r.files };
  return { ok: false, reason: `cannot rebase onto ${into}: ${r.message}` };
}

/**
 * The lane ends without merging: what it changed is committed to its branch,
 * which stays (status names it), and its worktree goes. The worktree left,
 * or null.
 */
export async function keepLane(host: Host, a: { repo: string; title: string; runId: string; emit(e: LaneNote): void }, lane: LaneState, status: "blocked" | "stopped", reason: string): Promise<string | null> {
  let worktree = lane.worktree;
  if (worktree && host.files.exists(worktree)) {
    if (lane.status === "merging") await abortUnfinishedMerge(host, worktree);
    const c = await commitAll(host, worktree, `Work in progress on ${a.title}\n\nTask ${lane.task}, ${status} in phaseloop run ${a.runId}: ${reason}`);
    if (!c.ok) {
      // the worktree stays, so that nothing is lost
      a.emit({ type: "note", level: "warning", message: `task ${lane.task}: its work could not be committed to ${lane.branch} (${c.message}); its worktree ${worktree} is kept` });
    } else {
      await removeWorktree(host, a.repo, worktree);
      worktree = null;
    }
  }
  a.emit({ type: "lane.blocked", task: lane.task, branch: lane.branch, status, reason, conflicts: lane.conflicts });
  return worktree;
}
