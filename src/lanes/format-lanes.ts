/** The lanes of a run in words, for `status` and summary.md. */
import type { LanesState, LaneState } from "../machine/types.ts";

/** One line per lane: its task, where it stands, and where its work is. */
export function formatLane(l: LaneState): string {
  switch (l.status) {
    case "running":
      return `${l.task}: running · iteration ${l.iteration}${l.phase ? ` · ${l.phase}` : ""} · branch ${l.branch}`;
    case "merging":
      return `${l.task}: merging · branch ${l.branch}`;
    case "merged":
      return `${l.task}: merged${l.rebased ? " (rebased, verified again)" : ""}`;
    default:
      return `${l.task}: ${l.status}: ${l.reason ?? ""} · its work is on branch ${l.branch}${l.conflicts.length ? ` · conflicting files: ${l.conflicts.join(", ")}` : ""}${l.worktree ? ` · worktree ${l.worktree}` : ""}`;
  }
}

export function formatLanesHeading(lanes: LanesState): string {
  const running = lanes.lanes.filter((l) => l.status === "running" || l.status === "merging").length;
  return `${running} running of ${lanes.parallel} at once · merged into ${lanes.into}`;
}

/** The lanes as read from a checkpoint, if it has them (anything else is left out). */
export function lanesOf(snapshot: unknown): LanesState | null {
  const l = (snapshot as { lanes?: unknown } | null)?.lanes as LanesState | undefined;
  return l && typeof l === "object" && Array.isArray(l.lanes) && typeof l.parallel === "number" ? l : null;
}
