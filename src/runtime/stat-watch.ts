/**
 * `git status` without git, when nothing moved. After git answered what differs between an
 * index and the work tree, the files it considered (tracked and untracked, not ignored) and
 * every folder of the tree are stat'ed (a new entry anywhere changes its folder's time); if a
 * later look for the same index finds every one as it was, the answer is the same and no
 * process is started. A review or verify phase that
 * changed nothing is measured in-process.
 *
 * Files written within the file system's timestamp granularity of the look (a jiffy for
 * Linux's coarse clock) can change again without their stat changing: their content is
 * hashed too. Any directory whose entries changed, any file whose stat or (for those) content
 * changed, sends the look back to git. Only small trees are watched: beyond WATCH_LIMIT files,
 * stat'ing them in JavaScript costs more than git.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Beyond this many files, git is faster than stat'ing them here. */
export const WATCH_LIMIT = 2000;
/** Beyond this many folders (an ignored node_modules, say), the same. */
const DIR_LIMIT = 1000;

/** Files modified this close to the look (ms) are hashed as well: their stat may not show the next write. */
const RACY_MS = 50;

interface Watched {
  workdir: string;
  /** The index file's own stat when git answered: a rewritten index is a new question. */
  indexStat: string;
  answer: string[];
  /** path (absolute) → stat text, and for racy files their content hash. */
  stats: Map<string, string>;
}

/** By index file: the iteration's and a phase's baselines are watched side by side. */
const watched = new Map<string, Watched>();
const KEEP = 8;

/** A file's stat as text (mode, size, times, inode), or "absent". */
export function statText(path: string): string {
  try {
    const st = lstatSync(path, { bigint: true });
    return `${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`;
  } catch {
    return "absent";
  }
}

function contentHash(path: string): string {
  try {
    return createHash("sha1").update(readFileSync(path)).digest("hex");
  } catch {
    return "unreadable";
  }
}

/** Whole seconds: a file system that keeps no finer times (FAT, some network mounts). */
const COARSE_RACY_MS = 2100;

function isRacy(stat: string, now: number): boolean {
  const parts = stat.split(":");
  if (parts.length < 4) return false;
  const mtimeNs = BigInt(parts[2]!);
  const ctimeNs = BigInt(parts[3]!);
  const latest = Number((mtimeNs > ctimeNs ? mtimeNs : ctimeNs) / 1_000_000n);
  const coarse = mtimeNs % 1_000_000_000n === 0n && ctimeNs % 1_000_000_000n === 0n;
  return now - latest < (coarse ? COARSE_RACY_MS : RACY_MS);
}

/**
 * The answer git gave for this index, when nothing it depends on has changed since; undefined
 * when git must be asked.
 */
export function watchedAnswer(workdir: string, index: string): string[] | undefined {
  const w = watched.get(index);
  if (!w || w.workdir !== workdir || statText(index) !== w.indexStat) return undefined;
  for (const [path, was] of w.stats) {
    const hashAt = was.indexOf("#");
    const stat = hashAt < 0 ? was : was.slice(0, hashAt);
    if (statText(path) !== stat) return undefined;
    if (hashAt >= 0 && contentHash(path) !== was.slice(hashAt + 1)) return undefined;
  }
  return [...w.answer];
}

/**
 * Remember git's answer for this index with the stat of what it depends on: `files` are the
 * paths git considered, relative to the workdir (`extra` are absolute paths whose change also
 * changes the answer, such as .git/info/exclude). Trees beyond WATCH_LIMIT are not watched.
 */
export function watchAnswer(workdir: string, index: string, answer: readonly string[], files: readonly string[], extra: readonly string[] = []): void {
  watched.delete(index);
  if (files.length > WATCH_LIMIT) return;
  // every folder, not only those holding the files: an empty one, or one of ignored files
  // only, can be given a file git would list
  const dirs = foldersOf(workdir);
  if (dirs === undefined) return;
  const now = Date.now();
  const stats = new Map<string, string>();
  for (const rel of [...files, ...answer]) {
    const path = join(workdir, rel);
    const stat = statText(path);
    stats.set(path, isRacy(stat, now) ? `${stat}#${contentHash(path)}` : stat);
  }
  for (const dir of dirs) {
    const stat = statText(dir);
    // a directory changed within the granularity could gain an entry unseen: then no watch
    if (isRacy(stat, now)) return;
    stats.set(dir, stat);
  }
  for (const path of extra) stats.set(path, statText(path));
  watched.set(index, { workdir, indexStat: statText(index), answer: [...answer], stats });
  while (watched.size > KEEP) watched.delete(watched.keys().next().value!);
}

/** The workdir and every folder under it (`.git` and phaseloop's own left out); undefined past DIR_LIMIT. */
function foldersOf(workdir: string): string[] | undefined {
  const found = [workdir];
  for (let i = 0; i < found.length; i++) {
    let entries;
    try {
      entries = readdirSync(found[i]!, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (!entry.isDirectory() || entry.name === ".git" || (i === 0 && entry.name === ".phaseloop")) continue;
      found.push(join(found[i]!, entry.name));
      if (found.length > DIR_LIMIT) return undefined;
    }
  }
  return found;
}
