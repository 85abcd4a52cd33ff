/**
 * What a write scope compares: everything an agent can change. Besides the
 * measure of progress (tracked and untracked files), it sees git-ignored
 * files (by stat) and the repository's own files under `.git` (kept byte for
 * byte, so that a revert can put back a hook, the config, a ref or the
 * index). Those are never inside a write scope.
 */
import { removeInside } from "../host/remove-inside.ts";
import { lstatSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { diffSnapshots, snapshotFiles, statKey } from "./file-snapshot.ts";
import { gitInternalsChanged, restoreGitInternals, snapshotGitInternals, workdirPath, type GitInternals } from "./git-internals.ts";
import { changesSince, revertPaths, takeBaseline, type Baseline } from "./measure-changes.ts";
import { measureDir, privateEnv, runGit, worktreeChanges, type GitRepo } from "./private-git.ts";

export interface ScopeBaseline {
  changes: Baseline;
  /** Git-ignored files by stat (in git), or every file outside git. */
  ignored: Record<string, string>;
  /** The repository's own files (in git). */
  internals?: { dirs: string[]; files: GitInternals };
}

export interface ScopeChanges {
  /** Changed paths relative to the workdir, ignored files included. */
  paths: string[];
  /** Changed files of the repository itself (`.git/…`), as the workdir names them: never in scope. */
  internals: string[];
}

const PLAIN_SKIP = new Set([".phaseloop"]);
const STAT_ONLY = new Set(["node_modules", ".git"]);

/** What a scope baseline can take over from the last look at the workdir (nothing having changed since) instead of scanning. */
export interface ScopeReuse {
  /** The change baseline of the present. */
  changes: Baseline;
  /** The rest, when the last look was a write scope's of the same kind (git or not). */
  ignored?: Record<string, string>;
  internals?: { dirs: string[]; files: GitInternals };
}

export function takeScopeBaseline(workdir: string, reuse?: ScopeReuse): ScopeBaseline {
  const changes = reuse?.changes ?? takeBaseline(workdir, "phase");
  if (changes.kind !== "git") return { changes, ignored: reuse?.ignored ?? plainSnapshot(workdir) };
  const dirs = [changes.gitDir, changes.commonDir];
  const internals = reuse?.internals ?? { dirs, files: snapshotGitInternals(dirs) };
  const ignored = reuse?.ignored ?? ignoredFiles(workdir, worktreeChanges(workdir, changes, changes.index, true)?.ignored ?? []);
  return { changes, ignored, internals };
}

export function scopeChangesSince(workdir: string, base: ScopeBaseline): ScopeChanges {
  return scopeChangesAndPresent(workdir, base).changes;
}

/**
 * The scope's changes, with what the look found that a later baseline can
 * take over: in git, the tracked and untracked files changed since the
 * baseline (ignored ones not), and the present's ignored files and
 * repository files.
 */
export function scopeChangesAndPresent(workdir: string, base: ScopeBaseline): { changes: ScopeChanges; tree?: string[]; present: Omit<ScopeReuse, "changes"> } {
  if (base.changes.kind !== "git") {
    const now = plainSnapshot(workdir);
    const paths = diffSnapshots(base.ignored, now);
    // a repository an agent created is as much git's as any other
    return { changes: { paths: paths.filter((p) => !isGitPath(p)), internals: paths.filter(isGitPath) }, present: { ignored: now } };
  }
  const repo = base.changes;
  const status = worktreeChanges(workdir, repo, repo.index, true);
  const ignoredNow = ignoredFiles(workdir, status?.ignored ?? []);
  const paths = new Set([...(status?.changed ?? changesSince(workdir, repo)), ...diffSnapshots(base.ignored, ignoredNow)]);
  const internals = base.internals ? gitInternalsChanged(base.internals.files, base.internals.dirs, (path, was) => sameIndex(workdir, repo, path, was)).map((p) => workdirPath(workdir, p)) : [];
  for (const p of internals) paths.delete(p);
  const changes = { paths: [...paths].filter((p) => !isGitPath(p)).sort(), internals: [...new Set([...internals, ...[...paths].filter(isGitPath)])].sort() };
  const present = { ignored: ignoredNow, internals: base.internals && { dirs: base.internals.dirs, files: snapshotGitInternals(base.internals.dirs, base.internals.files) } };
  return { changes, tree: status?.changed, present };
}

function plainSnapshot(workdir: string): Record<string, string> {
  return snapshotFiles(workdir, { skip: PLAIN_SKIP, statOnly: STAT_ONLY });
}

/**
 * Put paths (as `scopeChangesSince` named them) back as they were; returns
 * the ones it could not: an ignored file that was changed or removed (only
 * its stat was kept) or, outside git, any file that existed before.
 */
export function revertScope(workdir: string, base: ScopeBaseline, paths: string[]): string[] {
  const internals = base.internals;
  const inGit = new Map(internals ? [...internals.files.keys(), ...gitInternalsChanged(internals.files, internals.dirs)].map((abs) => [workdirPath(workdir, abs), abs] as const) : []);
  const stuck: string[] = [];
  const git: string[] = [];
  const tree: string[] = [];
  for (const p of paths) {
    const abs = inGit.get(p);
    if (abs) git.push(abs);
    else if (base.ignored[p] !== undefined) stuck.push(p);
    else if (isGitPath(p) || base.changes.kind !== "git") removeCreated(workdir, p, stuck);
    else tree.push(p);
  }
  if (internals) stuck.push(...restoreGitInternals(internals.files, git).map((abs) => workdirPath(workdir, abs)));
  stuck.push(...revertPaths(workdir, base.changes, tree));
  return stuck.sort();
}

function removeCreated(workdir: string, path: string, stuck: string[]): void {
  try {
    if (!removeInside(workdir, path, { recursive: true })) stuck.push(path);
  } catch {
    stuck.push(path);
  }
}

function isGitPath(p: string): boolean {
  return p === ".git" || p.startsWith(".git/") || /(^|\/)\.git\//.test(p);
}

/** The files under ignored entries (`dir/` for a wholly ignored directory), by stat. */
function ignoredFiles(workdir: string, entries: string[]): Record<string, string> {
  const files: Record<string, string> = {};
  for (const entry of entries) {
    if (entry.endsWith("/")) snapshotFiles(join(workdir, entry), { skip: PLAIN_SKIP, hash: false }, entry, files);
    else {
      try {
        files[entry] = statKey(lstatSync(join(workdir, entry)));
      } catch {
        // vanished
      }
    }
  }
  return files;
}

/** Two index contents with the same entries (a `git status` refreshes the stat data it keeps). */
function sameIndex(workdir: string, repo: GitRepo, path: string, was: Uint8Array): boolean {
  if (path !== join(repo.gitDir, "index")) return false;
  const copy = join(measureDir(workdir), "index-compare");
  return entriesOf(workdir, repo, path) === entriesFromBytes(workdir, repo, copy, was);
}

function entriesOf(workdir: string, repo: GitRepo, index: string): string | undefined {
  const r = runGit(["ls-files", "-s", "-z"], repo.root, privateEnv(workdir, repo, index));
  return r.ok ? r.out : undefined;
}

function entriesFromBytes(workdir: string, repo: GitRepo, copy: string, data: Uint8Array): string | undefined {
  try {
    writeFileSync(copy, data);
    return entriesOf(workdir, repo, copy) ?? "\0unreadable";
  } finally {
    rmSync(copy, { force: true });
  }
}
