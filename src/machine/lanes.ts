/**
 * The lane scheduler: a task queue worked in parallel lanes, as states,
 * events and effects. `laneTransition(machine, board, event)` returns the
 * next board and the effects to carry out, and carries out none of them
 * (the shell makes worktrees, runs each lane's loop as a child snapshot with
 * its own checkpoint, commits and merges). Pure: time comes in events.
 *
 * Its rules are the machine's own: which task is ready, and what blocks its
 * dependents, are the task queue's (task-queue.ts); the budgets and
 * max_duration every lane shares are the stop logic's (stop-logic.ts),
 * checked over the lanes' totals. In a run with lanes a task is `done` only
 * once its branch is merged, so "every dependency done" is "every dependency
 * merged". A merge that conflicts is rebased onto the target and verified
 * again, once; a second conflict blocks the task, its work kept on its
 * branch. A limit or an interrupt stops every lane; the board ends once no
 * lane is busy: stopped at the limit, interrupted (lanes resume where they
 * were), or handed over to the run's own machine for the final gate.
 */
import { cloneJson } from "./clone-json.ts";
import type { Draft } from "./draft.ts";
import { limitReached } from "./stop-logic.ts";
import { blockUnworkable, onlyTask, readyInOrder } from "./task-queue.ts";
import type { LaneState, Machine, Snapshot, StopReason } from "./types.ts";

/** The scheduler's state: the run's snapshot (what its checkpoint holds) and what this life of the run has under way. */
export interface LaneBoard {
  /** The run's snapshot, with its tasks and `lanes`. */
  s: Snapshot;
  /** Tasks whose lane has work under way now: its loop, its merge or its rebase (none after a crash). */
  busy: string[];
  /** The run-wide limit that stopped every lane, once one is reached. */
  limit: StopReason | null;
  /** The signal that interrupted the run, once one did. */
  interrupted: string | null;
  /** The target's head, as the last merge left it: new lanes branch from it. */
  head: string;
  /** Each task's branch and worktree, named by the shell (a name is a file and branch name). */
  names: Record<string, { branch: string; worktree: string }>;
}

export type LaneEvent =
  /** The lanes start, or go on after a resume: every lane a crash left is taken up again. `head` is the target's. */
  | { type: "lanes.begin"; at: number; head: string; names: Record<string, { branch: string; worktree: string }> }
  /** A lane's loop went on: the iteration and phase it is in; `used` when a phase finished. */
  | { type: "lane.progress"; at: number; task: string; iteration?: number; phase?: string | null; used?: { phase: string; tokens: number; costUsd: number } }
  /** A lane's loop ended: its task done (to merge), not done (blocked, with the reason), or interrupted. */
  | { type: "lane.loop.ended"; at: number; task: string; end: "done" | "not-done" | "interrupted"; reason?: string; attempts: number }
  /** The lane's branch is merged into the target; `attempts` are its task's. */
  | { type: "lane.merged"; at: number; task: string; commit: string; attempts: number }
  /** Merging the lane's branch conflicts with the target in `files`. */
  | { type: "lane.conflict"; at: number; task: string; files: string[] }
  /** The lane was rebased onto the target without a conflict. */
  | { type: "lane.rebased"; at: number; task: string }
  /** A step of the lane's git work failed (its worktree, a commit, the merge, the rebase): the lane is blocked. */
  | { type: "lane.failed"; at: number; task: string; reason: string; conflicts?: string[] }
  /** The lane's work is kept on its branch (lane.keep done): its worktree is gone, or kept when its work could not be committed. */
  | { type: "lane.kept"; at: number; task: string; status: "blocked" | "stopped"; reason: string; worktree: string | null }
  /** The lane's worktree is gone (tidied after its merge, or after its work was kept on its branch). */
  | { type: "lane.tidied"; at: number; task: string }
  /** The clock: max_duration is checked while lanes run. */
  | { type: "tick"; at: number }
  | { type: "interrupted"; at: number; signal: string };

export type LaneEffect =
  /** Make the lane's worktree from the target's head and run its loop (a child snapshot of its own). */
  | { type: "lane.open"; task: string }
  /** Run on the lane's loop from its own checkpoint (a crash left it running). */
  | { type: "lane.resume"; task: string }
  /** Commit the lane's work (one commit naming the task) and merge its branch into the target; `resumed`: a crash left the merge (what git left half done is undone first). */
  | { type: "lane.merge"; task: string; resumed?: true }
  /** Rebase the lane onto the target, after a conflict. */
  | { type: "lane.rebase"; task: string; files: string[] }
  /** Run `phase` of the lane's loop again (rebased: its rules decide anew), or merge again when there is none. */
  | { type: "lane.verify"; task: string; phase: string }
  /** The lane ends without merging: its work is committed to its branch, which stays, and its worktree goes (answered by lane.kept). */
  | { type: "lane.keep"; task: string; status: "blocked" | "stopped"; reason: string }
  /** A merged lane's worktree and branch go. */
  | { type: "lane.tidy"; task: string }
  /** Stop every lane's loop (a limit, or an interrupt). */
  | { type: "lanes.abort"; reason: string }
  | { type: "task.update"; task: string; status: "pending" | "done" | "blocked"; attempts: number; reason: string | null }
  /** The queue is finished: the run's own machine takes over in the target (the final gate, the end hooks, the outcome). */
  | { type: "lanes.handover" }
  /** Every lane has stopped for the interrupt; each resumes where it was. */
  | { type: "lanes.interrupted"; signal: string }
  /** A run-wide limit stopped the lanes: the run ends `stopped`. */
  | { type: "stop"; outcome: "stopped"; reason: StopReason };

/** A board for the run's snapshot: nothing under way yet. */
export function laneBoard(s: Snapshot): LaneBoard {
  return { s, busy: [], limit: null, interrupted: null, head: "HEAD", names: {} };
}

interface Step {
  m: Machine;
  b: LaneBoard;
  fx: LaneEffect[];
}

/** The next board and the effects to carry out. Never mutates its input. */
export function laneTransition(machine: Machine, board: LaneBoard, event: LaneEvent): { board: LaneBoard; effects: LaneEffect[] } {
  const b: LaneBoard = cloneJson(board);
  const st: Step = { m: machine, b, fx: [] };
  const s = b.s;
  if (!s.lanes || !s.tasks || (s.status === "done" && event.type !== "lane.tidied")) return { board: b, effects: [] };
  if (event.type === "lanes.begin") s.lastAt = event.at; // time spent stopped does not count
  else {
    if (s.lastAt !== null && event.at > s.lastAt) s.elapsedMs += event.at - s.lastAt;
    s.lastAt = event.at;
  }
  const lane = "task" in event ? s.lanes.lanes.find((l) => l.task === event.task) : undefined;
  switch (event.type) {
    case "lanes.begin":
      s.status = "running";
      b.head = event.head;
      b.names = event.names;
      for (const l of s.lanes.lanes) {
        // lanes a crash left: merging ones finish their merge, running ones go on, merged ones are tidied (their branch too)
        if (l.status === "merging") busy(st, l.task, { type: "lane.merge", task: l.task, resumed: true });
        else if (l.status === "running") busy(st, l.task, { type: "lane.resume", task: l.task });
        else if (l.status === "merged") st.fx.push({ type: "lane.tidy", task: l.task });
      }
      break;
    case "lane.progress":
      if (!lane) break;
      if (event.iteration !== undefined) lane.iteration = event.iteration;
      if (event.phase !== undefined) lane.phase = event.phase;
      if (event.used) {
        lane.phase = null;
        lane.verify = event.used.phase;
        lane.tokens += event.used.tokens;
        lane.cost_usd += event.used.costUsd;
        s.tokens += event.used.tokens;
        s.costUsd += event.used.costUsd;
      }
      break;
    case "lane.loop.ended": {
      if (!lane || !b.busy.includes(event.task)) break;
      if (event.end === "interrupted" && (b.interrupted || !b.limit)) {
        idle(st, event.task); // it goes on when the run is resumed
        break;
      }
      const t = s.tasks.find((x) => x.id === event.task)!;
      t.attempts = Math.max(t.attempts, event.attempts);
      if (event.end === "interrupted") keep(st, lane, "stopped", b.limit!.message);
      else if (event.end === "not-done") keep(st, lane, "blocked", event.reason ?? "its loop did not finish its task");
      else {
        lane.status = "merging";
        st.fx.push({ type: "lane.merge", task: lane.task });
      }
      break;
    }
    case "lane.merged": {
      if (!lane || lane.status !== "merging") break;
      lane.status = "merged";
      lane.phase = null;
      b.head = event.commit;
      const t = s.tasks.find((x) => x.id === event.task)!;
      t.attempts = Math.max(t.attempts, event.attempts);
      t.status = "done";
      t.reason = null;
      s.lastDoneTask = t.id;
      st.fx.push({ type: "task.update", task: t.id, status: "done", attempts: t.attempts, reason: null });
      st.fx.push({ type: "lane.tidy", task: t.id });
      idle(st, t.id);
      break;
    }
    case "lane.conflict":
      if (!lane || lane.status !== "merging") break;
      lane.conflicts = event.files;
      // rebased onto the target as it is now, the task is verified again before it is merged; once
      if (lane.rebased || lane.worktree === null) keep(st, lane, "blocked", conflictReason(s.lanes.into, event.files));
      else st.fx.push({ type: "lane.rebase", task: lane.task, files: event.files });
      break;
    case "lane.rebased":
      if (!lane || lane.status !== "merging") break;
      lane.rebased = true;
      if (lane.verify) {
        lane.status = "running";
        st.fx.push({ type: "lane.verify", task: lane.task, phase: lane.verify });
      } else st.fx.push({ type: "lane.merge", task: lane.task });
      break;
    case "lane.failed":
      if (!lane || !b.busy.includes(event.task)) break;
      if (event.conflicts) lane.conflicts = event.conflicts;
      keep(st, lane, "blocked", event.reason);
      break;
    case "lane.kept": {
      if (!lane || !b.busy.includes(event.task)) break;
      lane.status = event.status;
      lane.phase = null;
      lane.reason = event.reason;
      lane.worktree = event.worktree;
      if (event.status === "blocked") {
        const t = s.tasks.find((x) => x.id === lane.task)!;
        t.status = "blocked";
        t.reason = event.reason;
        t.notes = [...t.notes, `[BLOCKED] ${event.reason}`];
        st.fx.push({ type: "task.update", task: t.id, status: "blocked", attempts: t.attempts, reason: event.reason });
      }
      idle(st, lane.task);
      break;
    }
    case "lane.tidied":
      if (lane) lane.worktree = null;
      break;
    case "tick":
      break;
    case "interrupted":
      if (b.interrupted === null) {
        b.interrupted = event.signal;
        st.fx.push({ type: "lanes.abort", reason: event.signal });
      }
      break;
  }
  checkLimits(st);
  schedule(st);
  return { board: b, effects: st.fx };
}

function busy(st: Step, task: string, effect: LaneEffect): void {
  if (!st.b.busy.includes(task)) st.b.busy.push(task);
  st.fx.push(effect);
}

function idle(st: Step, task: string): void {
  st.b.busy = st.b.busy.filter((t) => t !== task);
}

/**
 * The lane ends without merging: blocked (its task too) or stopped by a
 * run-wide limit (its task stays pending). It stays busy until its work is
 * kept on its branch (lane.kept).
 */
function keep(st: Step, lane: LaneState, status: "blocked" | "stopped", reason: string): void {
  st.fx.push({ type: "lane.keep", task: lane.task, status, reason });
}

/** Run-wide limits over all lanes: once one is reached, every lane stops. */
function checkLimits(st: Step): void {
  const b = st.b;
  if (b.limit || b.interrupted || b.s.status !== "running") return;
  b.limit = limitReached(b.s.limits, b.s, " (all lanes)");
  if (b.limit) st.fx.push({ type: "lanes.abort", reason: "limit" });
}

/** Start lanes for the tasks that are ready, as many as there are free lanes; end the board when nothing is under way. */
function schedule(st: Step): void {
  const { b, m } = st;
  const s = b.s;
  if (s.status !== "running") return;
  if (!b.limit && !b.interrupted) {
    for (const x of blockUnworkable(s.tasks!)) {
      const t = s.tasks!.find((y) => y.id === x.task)!;
      st.fx.push({ type: "task.update", task: t.id, status: "blocked", attempts: t.attempts, reason: t.reason });
    }
    const inLane = new Set(s.lanes!.lanes.filter((l) => l.status === "running" || l.status === "merging").map((l) => l.task));
    const slots = s.lanes!.parallel - inLane.size;
    const only = onlyTask({ m, s, fx: [] } as Draft);
    for (const t of slots > 0 ? readyInOrder(s.tasks!, m.tasks!.order, only, inLane).slice(0, slots) : []) {
      const name = b.names[t.id] ?? { branch: `phaseloop/${s.runId}/${t.id}`, worktree: `${s.info.workdir}/.phaseloop/lanes/${s.runId}/${t.id}` };
      const lane: LaneState = { task: t.id, branch: name.branch, worktree: name.worktree, base: b.head, status: "running", iteration: 0, phase: null, reason: null, conflicts: [], rebased: false, verify: null, tokens: 0, cost_usd: 0 };
      s.lanes!.lanes = [...s.lanes!.lanes.filter((l) => l.task !== t.id), lane];
      busy(st, t.id, { type: "lane.open", task: t.id });
    }
  }
  if (b.busy.length > 0) return;
  if (b.interrupted) {
    s.status = "interrupted";
    st.fx.push({ type: "lanes.interrupted", signal: b.interrupted });
  } else if (b.limit) {
    s.status = "done";
    s.awaiting = null;
    s.outcome = { outcome: "stopped", reason: b.limit };
    s.iteration = s.lanes!.lanes.reduce((n, l) => n + l.iteration, 0);
    st.fx.push({ type: "stop", outcome: "stopped", reason: b.limit });
  } else {
    // the queue is finished: the run's machine takes over where everything is merged
    if (!s.iterationOpen && s.awaiting === null) {
      s.iteration = Math.max(s.iteration, s.lanes!.lanes.reduce((n, l) => n + l.iteration, 0));
      s.limits.maxIterations = Math.max(s.limits.maxIterations, s.iteration + 1);
      s.currentTask = null;
    }
    s.status = "interrupted";
    st.fx.push({ type: "lanes.handover" });
  }
}

export function conflictReason(into: string, files: readonly string[]): string {
  return `conflicts with ${into} in ${files.slice(0, 10).join(", ")}${files.length > 10 ? ` (and ${files.length - 10} more)` : ""}`;
}
