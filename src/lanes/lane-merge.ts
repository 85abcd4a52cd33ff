/**
 * The end of a lane: a task its loop finished is committed (one commit naming
 * the task) and merged into the target; on a conflict the lane is rebased onto
 * the target and the phase that finished it runs again, once; a lane that
 * still conflicts, or whose loop did not finish its task, keeps its work on
 * its branch. Either way its worktree goes. Every step is safe to repeat after
 * a crash: the checkpoint says `merging` until the merge is recorded.
 */
import { existsSync, rmSync } from "node:fs";
import type { LaneState, StopReason } from "../machine/types.ts";
import type { EventInput } from "../run/event-log.ts";
import type { RunResult } from "../run/run-pipeline.ts";
import { branchExists, commitAll, deleteBranch, git, gitLater, mergeBranch, rebaseOnto, removeWorktree, revParse, type MergeResult } from "./lane-git.ts";
import type { LaneLoop } from "./lane-runner.ts";

export interface LaneEnd {
  /** What becomes of the task: done (merged), blocked (its branch kept), pending (stopped by a run-wide limit, or to be resumed). */
  status: "done" | "blocked" | "pending";
  reason: string | null;
  attempts: number;
  /** The target's head after the merge. */
  head?: string;
}

/**
 * A merged lane's worktree and branch go once nothing else waits for git (the
 * next lane starts first); the checkpoint says the worktree is gone only then,
 * so a crash before leaves it to the next life of the run.
 */
export function tidyLane(a: Pick<FinishLane, "repo" | "checkpoint">, lane: LaneState): void {
  gitLater(async (run, runChain) => {
    const worktree = lane.worktree;
    if (lane.status !== "merged") {
      if (worktree) await removeWorktree(a.repo, worktree, run);
    } else {
      const r = worktree ? await runChain(a.repo, ["worktree", "remove", "--force", "--force", worktree], ["branch", "--quiet", "-D", lane.branch]) : await run(a.repo, "branch", "--quiet", "-D", lane.branch);
      if (!r.ok || (worktree && existsSync(worktree))) {
        if (worktree) await removeWorktree(a.repo, worktree, run);
        await deleteBranch(a.repo, lane.branch, run);
      }
    }
    lane.worktree = null;
    a.checkpoint();
  });
}

export interface FinishLane {
  lane: LaneState;
  result: RunResult & { setupError?: string };
  loop: LaneLoop | undefined;
  repo: string;
  targetDir: string;
  into: string;
  title: string;
  runId: string;
  /** The run-wide limit that stopped every lane, if one did. */
  stopped: StopReason | null;
  emit(e: EventInput): void;
  checkpoint(): void;
  /** With a JSON task source and write_back: write the task's new state into it in `dir`, and name the file. */
  writeBack?: (dir: string, attempts: number) => string | undefined;
  verifyAgain(phase: string): Promise<RunResult>;
}

/**
 * A merge or rebase a crash left half done is undone: the step runs again from
 * its start. The index lock of a git command killed with phaseloop goes too (the
 * run's lock says no other phaseloop works here).
 */
export async function abortUnfinishedMerge(dir: string): Promise<void> {
  const lock = (await git(dir, "rev-parse", "--path-format=absolute", "--git-path", "index.lock")).out;
  if (lock && existsSync(lock)) rmSync(lock, { force: true });
  if ((await git(dir, "rev-parse", "--quiet", "--verify", "MERGE_HEAD")).ok) await git(dir, "merge", "--abort");
  for (const d of ["rebase-merge", "rebase-apply"]) {
    const path = (await git(dir, "rev-parse", "--path-format=absolute", "--git-path", d)).out;
    if (path && existsSync(path)) await git(dir, "rebase", "--abort");
  }
}

export async function finishLane(a: FinishLane): Promise<LaneEnd> {
  const { lane } = a;
  let result = a.result;
  const attempts = () => result.snapshot.tasks?.find((t) => t.id === lane.task)?.attempts ?? 0;
  if (result.setupError) return await keep(a, "blocked", result.setupError, attempts());
  for (;;) {
    if (result.outcome === "interrupted") {
      if (a.stopped) return await keep(a, "stopped", a.stopped.message, attempts());
      return { status: "pending", reason: null, attempts: attempts() };
    }
    const done = result.outcome === "complete" && result.snapshot.tasks?.find((t) => t.id === lane.task)?.status === "done";
    if (!done) return await keep(a, "blocked", laneReason(result, lane.task), attempts());
    // a merge a crash interrupted: what git left half done is undone first
    const resumed = lane.status === "merging";
    if (resumed && lane.worktree && existsSync(lane.worktree)) await abortUnfinishedMerge(lane.worktree);
    lane.status = "merging";
    a.checkpoint();
    if (lane.worktree && existsSync(lane.worktree)) {
      const c = await commitAll(lane.worktree, `${a.title}\n\nTask ${lane.task}, done and verified by phaseloop run ${a.runId}.`);
      if (!c.ok) return await keep(a, "blocked", c.message, attempts());
    }
    // the branch goes only once merged: a crash after that can leave a lane `merging` without one
    const gone = resumed && !(await branchExists(a.repo, lane.branch));
    const m: MergeResult = gone ? { kind: "merged", commit: (await revParse(a.targetDir, "HEAD")) ?? "" } : await mergeBranch(a.targetDir, lane.branch, `Merge task ${lane.task}: ${a.title}`, a.writeBack && (() => a.writeBack!(a.targetDir, attempts())));
    if (m.kind === "merged") {
      lane.status = "merged";
      lane.phase = null;
      a.emit({ type: "lane.merged", task: lane.task, branch: lane.branch, into: a.into, commit: m.commit, rebased: lane.rebased });
      tidyLane(a, lane);
      return { status: "done", reason: null, attempts: attempts(), head: m.commit };
    }
    if (m.kind === "failed") return await keep(a, "blocked", `cannot merge into ${a.into}: ${m.message}`, attempts());
    lane.conflicts = m.files;
    if (lane.rebased || !lane.worktree) {
      a.emit({ type: "lane.conflict", task: lane.task, branch: lane.branch, into: a.into, files: m.files, action: "blocked" });
      return await keep(a, "blocked", conflictReason(a.into, m.files), attempts());
    }
    // rebased onto the target as it is now, the task is verified again before it is merged
    const r = await rebaseOnto(lane.worktree, a.into);
    a.emit({ type: "lane.conflict", task: lane.task, branch: lane.branch, into: a.into, files: m.files, action: r.kind === "merged" ? "rebased" : "blocked" });
    if (r.kind === "conflict") {
      lane.conflicts = r.files;
      return await keep(a, "blocked", conflictReason(a.into, r.files), attempts());
    }
    if (r.kind === "failed") return await keep(a, "blocked", `cannot rebase onto ${a.into}: ${r.message}`, attempts());
    lane.rebased = true;
    lane.status = "running";
    a.checkpoint();
    if (lane.verify) result = await a.verifyAgain(lane.verify);
  }
}

function conflictReason(into: string, files: string[]): string {
  return `conflicts with ${into} in ${files.slice(0, 10).join(", ")}${files.length > 10 ? ` (and ${files.length - 10} more)` : ""}`;
}

function laneReason(result: RunResult, id: string): string {
  if (result.outcome === "awaiting") return "its loop asks a question, which a lane cannot wait for";
  const task = result.snapshot.tasks?.find((t) => t.id === id);
  if (task?.status === "blocked" && task.reason) return task.reason;
  const o = result.snapshot.outcome;
  return o ? `its loop ended ${o.outcome}: ${o.reason.message}` : `its loop ended ${result.outcome}`;
}

/**
 * The lane ends without merging: what it changed is committed to its branch,
 * which stays (status names it), and its worktree goes.
 */
async function keep(a: FinishLane, status: "blocked" | "stopped", reason: string, attempts: number): Promise<LaneEnd> {
  const { lane } = a;
  if (lane.worktree && existsSync(lane.worktree)) {
    if (lane.status === "merging") await abortUnfinishedMerge(lane.worktree);
    const c = await commitAll(lane.worktree, `Work in progress on ${a.title}\n\nTask ${lane.task}, ${status} in phaseloop run ${a.runId}: ${reason}`);
    if (!c.ok) {
      // the worktree stays, so that nothing is lost
      a.emit({ type: "note", level: "warning", message: `task ${lane.task}: its work could not be committed to ${lane.branch} (${c.message}); its worktree ${lane.worktree} is kept` });
    } else {
      await removeWorktree(a.repo, lane.worktree);
      lane.worktree = null;
    }
  }
  lane.status = status;
  lane.phase = null;
  lane.reason = reason;
  a.emit({ type: "lane.blocked", task: lane.task, branch: lane.branch, status, reason, conflicts: lane.conflicts });
  return { status: status === "blocked" ? "blocked" : "pending", reason, attempts };
}
