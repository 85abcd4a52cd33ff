/**
 * Measured progress: which files changed in the workdir between two moments,
 * never what the agent claims. In git a baseline is an index file of
 * phaseloop's own under `.phaseloop/measure/` matching the work tree at that
 * moment (untracked files included, ignored ones not), and a later measure is
 * `git status` against it: the user's index and object store are never
 * written. Elsewhere a baseline is a file snapshot. Each baseline is compared
 * with the present, not with HEAD: changes from earlier iterations do not
 * count again.
 *
 * A git baseline taken from the last measure (nothing having changed since)
 * keeps the earlier index and adds an overlay: the paths that measure found
 * different from that index, each with its state then (content hash and
 * mode, a link's target, or absent). A path is changed since the baseline
 * when `git status` against the index names it and the overlay does not,
 * or when its state differs from the overlay's: one `git status` per
 * measure, and none per baseline.
 */
import { removeInside } from "../host/remove-inside.ts";
import { lstatSync, rmSync } from "node:fs";
import { join } from "node:path";
import { diffSnapshots, pathState, snapshotFiles } from "./file-snapshot.ts";
import { WATCH_LIMIT } from "./stat-watch.ts";
import { watchedSnapshot } from "./snapshot-update.ts";
import { mayStartTreeWatch, stopTreeWatch, treeWatchFor } from "./tree-watch.ts";
import { advanceSlotIndex, findRepo, ignoredByRules, restoreFromIndex, runGit, workdirPathspec, worktreeChanges, writeSlotIndex } from "./private-git.ts";

/** pathState of a path that does not exist. */
const ABSENT = "-";

const SKIP_DIRS = new Set([".git", "node_modules", ".phaseloop"]);

export type Baseline =
  | { kind: "git"; index: string; root: string; prefix: string; gitDir: string; commonDir: string; overlay?: Record<string, string> }
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
  return { kind: "snapshot", files: plainSnapshot(workdir, false) };
}

/** Files changed (added, modified, deleted) since the baseline, relative to the workdir, sorted. */
export function changesSince(workdir: string, baseline: Baseline): string[] {
  return measureSince(workdir, baseline).changes;
}

/**
 * Files changed since the baseline, with what the look found that a later
 * baseline can take over: outside git the snapshot of the present, in git
 * the paths that differ from the baseline's index (`tree`, given when the
 * caller has already asked git).
 */
export function measureSince(workdir: string, baseline: Baseline, tree?: string[]): { changes: string[]; tree?: string[]; files?: Record<string, string> } {
  if (baseline.kind === "git") {
    const differ = tree ?? worktreeChanges(workdir, baseline, baseline.index)?.changed ?? [];
    const overlay = baseline.overlay;
    if (!overlay) return { changes: differ, tree: differ };
    const changes = new Set(differ.filter((p) => !Object.hasOwn(overlay, p)));
    const appeared: string[] = [];
    for (const [p, was] of Object.entries(overlay)) {
      const now = pathState(join(workdir, p));
      if (now === was) continue;
      if (was === ABSENT) appeared.push(p);
      else changes.add(p);
    }
    // absent at the baseline but still in its index: a file there now is new, and counts only
    // when the ignore rules let it, as for any new file (a fresh baseline would not hold it)
    const ignored = ignoredByRules(workdir, appeared);
    for (const p of appeared) if (!ignored.has(p)) changes.add(p);
    return { changes: [...changes].sort(), tree: differ };
  }
  const files = plainSnapshot(workdir, true);
  return { changes: diffSnapshots(baseline.files, files), files };
}

/** Workdirs outside git found too small for a tree watch (until a listing finds them larger). */
const smallTrees = new Set<string>();

/**
 * The workdir's snapshot outside git. A large tree's watch tells which
 * folders changed since its last snapshot, and those alone are read again,
 * when every write so far has been settled (`settled`: after a phase);
 * otherwise the tree is listed whole, and the watch keeps the listing for
 * the next look. A watch is started before the first listing (so that one
 * is kept too), and stopped if the tree is small.
 */
function plainSnapshot(workdir: string, settled: boolean): Record<string, string> {
  const watch = treeWatchFor(workdir);
  const options = { skip: SKIP_DIRS, keep: join(workdir, ".phaseloop", "measure", "listing") };
  if (watch && settled) return watchedSnapshot(workdir, watch, options).files;
  const tried = !watch && !mayStartTreeWatch(workdir); // a start was refused (no inotify here): never again
  const started = watch ?? (tried || smallTrees.has(workdir) ? undefined : treeWatchFor(workdir, true, SKIP_DIRS));
  const mark = started?.mark();
  const files = snapshotFiles(workdir, options);
  if (tried || watch) {
    if (watch && mark) watch.remember("snapshot", "", files, mark);
    return files;
  }
  const large = Object.keys(files).length > WATCH_LIMIT;
  if (started && mark && large) started.remember("snapshot", "", files, mark);
  else if (started) {
    stopTreeWatch(workdir);
    smallTrees.add(workdir);
  } else if (large) {
    smallTrees.delete(workdir);
    treeWatchFor(workdir, true, SKIP_DIRS); // from the next listing on
  }
  return files;
}

/** Beyond this many paths in an overlay, the baseline's index is brought up to date instead. */
const OVERLAY_LIMIT = 64;

/**
 * The baseline of the present without scanning the workdir, from the last
 * measure since `baseline` (nothing having changed since): its `tree` in
 * git, its snapshot outside. With `overlay` false (a baseline that must be an
 * index file of its own, for a write scope to restore from) the index is
 * brought up to date. Undefined when it cannot be done (the caller then
 * takes a baseline): in git, also when an ignore file changed, since the old
 * index still holds the files it now ignores, which a fresh baseline leaves out.
 */
export function advanceBaseline(workdir: string, baseline: Baseline, look: { tree?: string[]; files?: Record<string, string> }, slot = "iteration", overlay = true): Baseline | undefined {
  if (baseline.kind === "snapshot") return look.files && { kind: "snapshot", files: look.files };
  if (!look.tree || look.tree.some((p) => p === ".gitignore" || p.endsWith("/.gitignore"))) return undefined;
  const { overlay: _, ...base } = baseline;
  if (look.tree.length === 0) return base;
  if (overlay && look.tree.length <= OVERLAY_LIMIT) return { ...base, overlay: Object.fromEntries(look.tree.map((p) => [p, pathState(join(workdir, p))])) };
  const repo = findRepo(workdir);
  if (!repo) return undefined;
  const index = advanceSlotIndex(workdir, repo, baseline.index, slot, look.tree);
  return index ? { kind: "git", index, ...repo } : undefined;
}

/**
 * Restore paths to their baseline; returns the paths it could not restore. In
 * git every path can be (the baseline's index holds its content); outside git
 * the baseline holds hashes, not contents, so only files created since can be
 * undone (by removing them).
 */
export function revertPaths(workdir: string, baseline: Baseline, paths: string[]): string[] {
  if (baseline.kind === "git") {
    // a path of the overlay is not as the index has it
    const overlay = baseline.overlay ?? {};
    const held = paths.filter((p) => !Object.hasOwn(overlay, p));
    return [...restoreFromIndex(workdir, baseline, baseline.index, held), ...paths.filter((p) => Object.hasOwn(overlay, p))].sort();
  }
  const failed: string[] = [];
  for (const p of paths) {
    if (baseline.files[p] !== undefined) {
      failed.push(p);
      continue;
    }
    try {
      if (!removeInside(workdir, p)) failed.push(p);
    } catch {
      failed.push(p);
    }
  }
  return failed;
}

/** At most this many ignored entries are looked at for `ignoredChangedSince`. */
const IGNORED_LOOK_LIMIT = 5000;

/**
 * Files git ignores (outside wholly ignored folders) modified at or after
 * `sinceMs`: what a run changed that its measure left out, for the report.
 * Read only (`git ls-files`, which writes no index); [] outside git.
 */
export function ignoredChangedSince(workdir: string, sinceMs: number): string[] {
  const repo = findRepo(workdir);
  if (!repo) return [];
  const r = runGit(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", ...workdirPathspec(repo)], workdir);
  if (!r.ok) return [];
  const out: string[] = [];
  for (const entry of r.out.split("\0").slice(0, IGNORED_LOOK_LIMIT)) {
    if (!entry || entry.endsWith("/") || entry === ".phaseloop" || entry.startsWith(".phaseloop/")) continue;
    try {
      const st = lstatSync(join(workdir, entry));
      if (st.isFile() && st.mtimeMs >= sinceMs) out.push(entry);
    } catch {
      // gone
    }
  }
  return out.sort();
}
