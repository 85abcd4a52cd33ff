/**
 * Git as the measure sees it: the user's repository read through phaseloop's
 * own index files and object directory under `.phaseloop/measure/`, with the
 * user's objects as alternates. Nothing phaseloop runs here writes into the
 * user's `.git`: not an object, not the index.
 */
import { copyFileSync, existsSync, linkSync, readdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { indexEntries } from "./index-entries.ts";
import { ownGitSync } from "../host/own-git.ts";
import { removeInside } from "../host/remove-inside.ts";
import { comparesRawContent } from "./raw-content.ts";
import { makePhaseloopDir } from "../runtime/run-store.ts";
import { statText, WATCH_LIMIT, watchAnswer, watchedAnswer } from "./stat-watch.ts";
import { treeWatchFor } from "./tree-watch.ts";

export interface GitRepo {
  /** The top of the work tree. */
  root: string;
  /** The workdir's path inside it, with a trailing `/` (empty at the top). */
  prefix: string;
  /** The repository's own directory (`.git`, or `.git/worktrees/NAME` in a linked worktree). */
  gitDir: string;
  /** The directory holding the objects, refs, hooks and config shared by all worktrees. */
  commonDir: string;
}

export interface GitResult {
  ok: boolean;
  out: string;
}

// settings that would make a command write elsewhere than phaseloop's files, or run something
// (the untracked cache lives in phaseloop's index files, and spares git reading unchanged folders)
const SAFE_CONFIG = ["-c", "core.splitIndex=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=true", "-c", "status.showUntrackedFiles=all"];

export function runGit(args: string[], cwd: string, env?: Record<string, string>): GitResult {
  const r = ownGitSync([...SAFE_CONFIG, ...args], { cwd, env, maxBuffer: 1024 * 1024 * 1024 });
  return { ok: r.status === 0, out: r.stdout ?? "" };
}

/** Which of these paths (relative to the workdir) the repository's ignore rules ignore, whether or not an index tracks them. */
export function ignoredByRules(workdir: string, paths: string[]): Set<string> {
  if (paths.length === 0) return new Set();
  const r = ownGitSync([...SAFE_CONFIG, "check-ignore", "--no-index", "-z", "--stdin"], { cwd: workdir, input: paths.join("\0") + "\0" });
  // exit 1: none is ignored
  return new Set(r.status === 0 ? (r.stdout ?? "").split("\0").filter(Boolean) : []);
}

const repos = new Map<string, GitRepo>();

/** The repository around `workdir`, or undefined outside git (a repository once found is remembered). */
export function findRepo(workdir: string): GitRepo | undefined {
  const known = repos.get(workdir);
  if (known && existsSync(known.gitDir)) return known;
  const found = lookUpRepo(workdir);
  if (found) repos.set(workdir, found);
  return found;
}

function lookUpRepo(workdir: string): GitRepo | undefined {
  const r = runGit(["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir", "--show-prefix"], workdir);
  if (!r.ok) return undefined;
  const [root, gitDir, commonDir, prefix] = r.out.split("\n");
  if (!root || !gitDir || !commonDir) return undefined;
  return { root, prefix: prefix ?? "", gitDir, commonDir };
}

/** The private directory of the measure: index files and objects phaseloop owns. */
export function measureDir(workdir: string): string {
  // git takes a missing object directory for no repository at all
  return dirname(makePhaseloopDir(workdir, "measure", "objects"));
}

/** The environment under which git reads the user's repository through an index of phaseloop's own. */
export function privateEnv(workdir: string, repo: Pick<GitRepo, "commonDir">, index: string): Record<string, string> {
  const dir = measureDir(workdir);
  return {
    GIT_INDEX_FILE: index,
    GIT_OBJECT_DIRECTORY: join(dir, "objects"),
    GIT_ALTERNATE_OBJECT_DIRECTORIES: join(repo.commonDir, "objects"),
  };
}

/**
 * The pathspec of the workdir with phaseloop's own folder left out, for
 * commands run in the workdir. At the top of the work tree there is none:
 * `.phaseloop/` keeps itself out with its own `.gitignore`, and git uses the
 * untracked cache only for a whole-tree status.
 */
export function workdirPathspec(repo: Pick<GitRepo, "prefix">): string[] {
  return repo.prefix ? ["--", ".", ":(exclude,literal).phaseloop"] : [];
}

let counter = 0;

/**
 * A pathspec that leaves out every gitlink of the index `env` names: `git
 * add` asks each one's repository for its status (submodule config is no
 * help there), and a repository an agent made or pointed a `.git` file at
 * would run its own filters and fsmonitor, outside any sandbox.
 */
function withoutGitlinks(pathspec: string[], workdir: string, env: Record<string, string>): string[] {
  const r = runGit(["ls-files", "-s", "-z"], workdir, env);
  if (!r.ok) return pathspec;
  const links = r.out.split("\0").filter((e) => e.startsWith("160000 ")).map((e) => e.slice(e.indexOf("\t") + 1));
  if (links.length === 0) return pathspec;
  return [...(pathspec.length > 0 ? pathspec : ["--", "."]), ...links.map((p) => `:(exclude,literal)${p}`)];
}

/**
 * A new index file for `slot` matching the work tree now (untracked files
 * added, ignored ones not). It starts as a copy of the newest index phaseloop
 * has (or of the user's, read only), so git re-reads only what changed since;
 * the slot's older index files are removed.
 */
export function writeSlotIndex(workdir: string, repo: GitRepo, slot: string): string | undefined {
  const dir = measureDir(workdir);
  const name = slotName(slot);
  const index = join(dir, name);
  const work = `${index}.new`;
  const userIndex = join(repo.gitDir, "index");
  const seed = newestIndex(dir) ?? userIndex;
  const env = privateEnv(workdir, repo, work);
  try {
    if (existsSync(seed)) copyFileSync(seed, work);
    else runGit(["read-tree", "HEAD"], repo.root, env); // no HEAD yet: an empty index
    const add = runGit(["add", "-A", "--ignore-errors", ...withoutGitlinks(workdirPathspec(repo), workdir, env)], workdir, env);
    if (!add.ok && !existsSync(work)) return undefined;
    if (seed !== userIndex) dropNowIgnored(workdir, repo, work, userIndex);
    renameSync(work, index);
  } catch {
    rmSync(work, { force: true });
    return undefined;
  }
  endOlder(dir, slot, name);
  return index;
}

/**
 * A copy of one of phaseloop's indexes holds the untracked files it added
 * then, and `git add` never drops an entry: those the ignore rules now ignore
 * are removed, as a scan seeded from the user's index would not have them.
 * The user's own tracked files stay, ignored or not, as git keeps them.
 */
function dropNowIgnored(workdir: string, repo: GitRepo, index: string, userIndex: string): void {
  const ignoredIn = (file: string, env: Record<string, string>) => {
    const r = runGit(["ls-files", "-z", "-c", "-i", "--exclude-standard", ...workdirPathspec(repo)], workdir, { ...env, GIT_INDEX_FILE: file });
    return r.ok ? r.out.split("\0").filter(Boolean) : undefined;
  };
  const ours = ignoredIn(index, privateEnv(workdir, repo, index));
  // without the user's index there is no telling theirs from ours: nothing is dropped
  if (!ours || ours.length === 0 || !existsSync(userIndex)) return;
  const theirs = new Set(ignoredIn(userIndex, {}) ?? ours);
  const drop = ours.filter((p) => !theirs.has(p));
  if (drop.length === 0) return;
  ownGitSync([...SAFE_CONFIG, "update-index", "--force-remove", "-z", "--stdin"], { cwd: workdir, env: privateEnv(workdir, repo, index), input: drop.join("\0") + "\0", stdio: ["pipe", "ignore", "ignore"] });
}

/**
 * A new index file for `slot`: the index `from` with `paths` (relative to
 * the workdir) brought up to the work tree, added, updated or removed. It
 * matches the work tree when `from` did except at `paths`, so no scan is
 * needed. Undefined when git cannot (the caller then scans).
 */
export function advanceSlotIndex(workdir: string, repo: GitRepo, from: string, slot: string, paths: string[]): string | undefined {
  const dir = measureDir(workdir);
  const name = slotName(slot);
  const index = join(dir, name);
  const work = `${index}.new`;
  try {
    // git replaces an index file (lock, then rename) and never writes into it: a link is a copy
    try {
      linkSync(from, work);
    } catch {
      copyFileSync(from, work);
    }
    if (paths.length > 0) {
      const r = ownGitSync([...SAFE_CONFIG, "update-index", "--add", "--remove", "-z", "--stdin"], { cwd: workdir, env: privateEnv(workdir, repo, work), input: paths.join("\0") + "\0", stdio: ["pipe", "ignore", "ignore"] });
      if (r.status !== 0) throw new Error("update-index failed");
    }
    renameSync(work, index);
  } catch {
    rmSync(work, { force: true });
    return undefined;
  }
  endOlder(dir, slot, name);
  return index;
}

function slotName(slot: string): string {
  return `index-${slot}-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
}

/** Remove the slot's index files other than `name` (a new baseline in a slot ends the previous one). */
function endOlder(dir: string, slot: string, name: string): void {
  for (const old of readdirSync(dir)) if (old.startsWith(`index-${slot}-`) && old !== name) rmSync(join(dir, old), { force: true });
}

function newestIndex(dir: string): string | undefined {
  let best: string | undefined;
  let bestTime = -1;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith("index-") || name.endsWith(".new") || name.endsWith(".lock")) continue;
    const time = Number.parseInt(name.split("-").at(-2) ?? "", 36);
    if (time > bestTime) [best, bestTime] = [join(dir, name), time];
  }
  return best;
}

/**
 * Paths (relative to the workdir) whose content, mode or existence differ
 * between the index and the work tree, untracked files included and ignored
 * ones not; `ignored` also lists the ignored ones (a directory wholly ignored
 * as `dir/`). Undefined when git fails.
 */
export function worktreeChanges(workdir: string, repo: GitRepo, index: string, ignored = false): { changed: string[]; ignored: string[] } | undefined {
  // a large tree at the top of its repository: the kernel says whether anything moved since git's answer
  const tree = !ignored && repo.prefix === "" ? treeWatchFor(workdir) : undefined;
  const questionOf = () => `${statText(index)}|${statText(join(repo.commonDir, "info", "exclude"))}`;
  if (!ignored) {
    const known = watchedAnswer(workdir, index) ?? tree?.answerFor<string[]>(index, questionOf())?.slice();
    if (known) return { changed: known, ignored: [] };
  }
  const mark = tree?.mark();
  const args = ["status", "--porcelain=v2", "-z", "-uall", "--no-renames", ...(ignored ? ["--ignored=traditional"] : []), ...workdirPathspec(repo)];
  const r = runGit(args, workdir, privateEnv(workdir, repo, index));
  if (!r.ok) return undefined;
  const changed: string[] = [];
  const ignoredPaths: string[] = [];
  const fields = r.out.split("\0");
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (!f) continue;
    let path: string | undefined;
    let list = changed;
    if (f.startsWith("? ")) path = f.slice(2);
    else if (f.startsWith("! ")) [path, list] = [f.slice(2), ignoredPaths];
    else if (f.startsWith("1 ")) {
      // the index against the work tree is the second letter; the first compares HEAD, which is not ours to measure
      if (f[3] !== ".") path = f.split(" ").slice(8).join(" ");
    } else if (f.startsWith("u ")) path = f.split(" ").slice(10).join(" ");
    else if (f.startsWith("2 ")) {
      if (f[3] !== ".") path = f.split(" ").slice(9).join(" ");
      i++; // the original path follows
    }
    if (path === undefined || !path.startsWith(repo.prefix)) continue;
    const rel = path.slice(repo.prefix.length);
    if (rel === ".phaseloop/" || rel.startsWith(".phaseloop/")) continue;
    list.push(rel);
  }
  changed.sort();
  if (!ignored) {
    if (watchGitAnswer(workdir, repo, index, changed)) return { changed, ignored: [] };
    if (tree && mark) tree.remember(index, questionOf(), [...changed], mark); // the index as git left it
    else if (repo.prefix === "") treeWatchFor(workdir, true); // too large for the stat watch: from the next look on
  }
  return { changed, ignored: ignoredPaths.sort() };
}

/** An index this large holds more files than are worth watching (about 100 bytes an entry). */
const WATCH_INDEX_BYTES = WATCH_LIMIT * 100;

/** Watch git's answer for this index (a small tree), so that a later look that finds little changed starts no process. */
function watchGitAnswer(workdir: string, repo: GitRepo, index: string, changed: string[]): boolean {
  const env = privateEnv(workdir, repo, index);
  const listed = indexEntries(index, WATCH_INDEX_BYTES, () => {
    const r = runGit(["ls-files", "-s", "-v", "-z", ...workdirPathspec(repo)], workdir, env);
    return r.ok ? r.out : undefined;
  });
  if (!listed) return false;
  const rules = comparesRawContent(repo, workdir, () => {
    const r = runGit(["config", "-l", "-z", "--show-origin"], workdir);
    return r.ok ? r.out : undefined;
  });
  // the ignore files of the folders above the workdir rule it too (the watch walks only the workdir)
  const above = repo.prefix.split("/").slice(0, -1).map((_, i, parts) => join(repo.root, ...parts.slice(0, i), ".gitignore"));
  watchAnswer(workdir, index, changed, listed.files, [join(repo.commonDir, "info", "exclude"), ...above, ...rules.sources], { entries: listed.entries, raw: rules.raw });
  return true;
}

/**
 * Put paths back as the index has them (content and mode); paths the index
 * does not hold are removed. Returns the paths it could not restore.
 */
export function restoreFromIndex(workdir: string, repo: GitRepo, index: string, paths: string[]): string[] {
  if (paths.length === 0) return [];
  const env = privateEnv(workdir, repo, index);
  const listed = runGit(["ls-files", "-z", "--", ...paths.map((p) => `:(literal)${p}`)], workdir, env);
  if (!listed.ok) return paths;
  const held = new Set(listed.out.split("\0").filter(Boolean));
  const failed: string[] = [];
  const back: string[] = [];
  for (const p of paths) {
    try {
      if (!removeInside(workdir, p, { recursive: true })) {
        failed.push(p);
        continue;
      }
    } catch {
      failed.push(p);
      continue;
    }
    if (held.has(p)) back.push(p);
  }
  if (back.length > 0) {
    const r = ownGitSync([...SAFE_CONFIG, "checkout-index", "-f", "-z", "--stdin"], { cwd: workdir, env, input: back.join("\0") + "\0" });
    if (r.status !== 0) failed.push(...back.filter((p) => !existsSync(join(workdir, p))));
  }
  return failed.sort();
}
