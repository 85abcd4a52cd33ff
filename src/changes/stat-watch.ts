/**
 * `git status` without git, when little moved. After git answered what differs between an
 * index and the work tree, the files it considered (tracked and untracked, not ignored), every
 * folder of the tree and every ignore file are stat'ed (a new entry anywhere changes its
 * folder's time); if a later look for the same index finds every one as it was, the answer is
 * the same and no process is started. A review or verify phase that changed nothing is
 * measured in-process.
 *
 * When only files changed (every folder as it was, so nothing was added, removed or renamed),
 * none of them an ignore file, and git compares raw bytes (`raw-content.ts`), the answer is
 * derived here too: a file git listed as untracked is still untracked, and a tracked file
 * differs from the index exactly when its mode or its blob id differs from the entry's. A
 * file git alone can judge (a submodule, an unmerged or skip-worktree entry) sends the look
 * to git.
 *
 * Files written within the file system's timestamp granularity of the look (a jiffy for
 * Linux's coarse clock) can change again without their stat changing: their content is
 * hashed too. Only small trees are watched: beyond WATCH_LIMIT files, stat'ing them in
 * JavaScript costs more than git.
 */
import { createHash } from "node:crypto";
import { basename, join } from "node:path";
import type { Host, HostFiles } from "../host/host.ts";
import { blobId } from "./index-entries.ts";

/** Beyond this many files, git is faster than stat'ing them here. */
export const WATCH_LIMIT = 2000;
/** Beyond this many folders (an ignored node_modules, say), the same. */
const DIR_LIMIT = 1000;

/** Files modified this close to the look (ms) are hashed as well: their stat may not show the next write. */
const RACY_MS = 50;

/** What a watched path was: its stat, its content's hash when racy, and for a file git considered its path in the workdir. */
interface Seen {
  stat: string;
  hash?: string;
  rel?: string;
}

interface Watched {
  workdir: string;
  /** The index file's own stat when git answered: a rewritten index is a new question. */
  indexStat: string;
  answer: string[];
  /** path (absolute) → what it was. */
  seen: Map<string, Seen>;
  /** The index's entries when changed files may be judged here (see IndexView), else undefined. */
  entries?: ReadonlyMap<string, string | null>;
}

/** What the watch needs of the index to judge changed files itself. */
export interface IndexView {
  /** path → "MODE OID", or null for an entry only git can judge (see index-entries.ts). */
  entries: ReadonlyMap<string, string | null>;
  /** Whether git compares raw bytes and modes in this repository (see raw-content.ts). */
  raw: boolean;
}

/** By index file: the iteration's and a phase's baselines are watched side by side. */
const watched = new Map<string, Watched>();
const KEEP = 8;

/** A file's stat as text (mode, size, times, inode), or "absent". */
export function statText(files: HostFiles, path: string): string {
  try {
    const st = files.lstatExact(path);
    return st ? `${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}` : "absent";
  } catch {
    return "absent";
  }
}

/** A file's bytes as git reads them: a symlink's target text, a file's content. */
function contentOf(files: HostFiles, path: string, symlink: boolean): Uint8Array | undefined {
  try {
    return symlink ? files.readlinkBytes(path) : files.readBytes(path);
  } catch {
    return undefined;
  }
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;
const modeOf = (stat: string) => (stat === "absent" ? 0 : Number(stat.slice(0, stat.indexOf(":"))));

function hashOf(content: Uint8Array | undefined): string {
  return content ? createHash("sha1").update(content).digest("hex") : "unreadable";
}

const contentHash = (files: HostFiles, path: string, stat: string) => hashOf(contentOf(files, path, (modeOf(stat) & S_IFMT) === S_IFLNK));

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

/** What a path is now, hashed as well when racy (`content` when already read). */
function seenNow(files: HostFiles, path: string, stat: string, now: number, rel?: string, content?: Uint8Array): Seen {
  if (!isRacy(stat, now)) return { stat, rel };
  return { stat, hash: content ? hashOf(content) : contentHash(files, path, stat), rel };
}

/**
 * The answer git would give for this index, when nothing it depends on has changed since its
 * last answer or only files that can be judged here; undefined when git must be asked.
 */
export function watchedAnswer(host: Host, workdir: string, index: string): string[] | undefined {
  const files = host.files;
  const w = watched.get(index);
  if (!w || w.workdir !== workdir || statText(files, index) !== w.indexStat) return undefined;
  const moved: [string, Seen][] = [];
  for (const [path, was] of w.seen) {
    const stat = statText(files, path);
    if (stat === was.stat && (was.hash === undefined || contentHash(files, path, stat) === was.hash)) continue;
    // a folder, an ignore file, a configuration file: git's to answer
    if (!w.entries || was.rel === undefined) return undefined;
    moved.push([path, was]);
  }
  if (moved.length === 0) return [...w.answer];
  const entries = w.entries!;
  const answer = new Set(w.answer);
  const now = host.clock.now();
  const seen: [string, Seen][] = [];
  for (const [path, was] of moved) {
    const rel = was.rel!;
    const stat = statText(files, path);
    const type = modeOf(stat) & S_IFMT;
    if (type !== S_IFREG && type !== S_IFLNK) return undefined;
    const entry = entries.get(rel);
    if (entry === undefined) {
      // untracked when git answered, and still there as a file: untracked still, whatever it holds
      if (!answer.has(rel)) return undefined;
      seen.push([path, seenNow(files, path, stat, now, rel)]);
      continue;
    }
    if (entry === null) return undefined;
    const content = contentOf(files, path, type === S_IFLNK);
    if (!content) return undefined;
    const mode = type === S_IFLNK ? "120000" : modeOf(stat) & 0o100 ? "100755" : "100644";
    const oid = entry.slice(entry.indexOf(" ") + 1);
    if (`${mode} ${blobId(content, oid)}` === entry) answer.delete(rel);
    else answer.add(rel);
    seen.push([path, seenNow(files, path, stat, now, rel, content)]);
  }
  for (const [path, s] of seen) w.seen.set(path, s);
  w.answer = [...answer].sort();
  return [...w.answer];
}

/**
 * Remember git's answer for this index with the stat of what it depends on: `files` are the
 * paths git considered, relative to the workdir (`extra` are absolute paths whose change also
 * changes the answer, such as .git/info/exclude). With `view`, a later look may judge changed
 * files itself. Trees beyond WATCH_LIMIT are not watched.
 */
export function watchAnswer(host: Host, workdir: string, index: string, answer: readonly string[], files: readonly string[], extra: readonly string[] = [], view?: IndexView): void {
  watched.delete(index);
  if (files.length > WATCH_LIMIT) return;
  const fs = host.files;
  // every folder, not only those holding the files: an empty one, or one of ignored files
  // only, can be given a file git would list
  const tree = walk(fs, workdir);
  if (tree === undefined) return;
  const now = host.clock.now();
  const seen = new Map<string, Seen>();
  for (const rel of [...files, ...answer]) {
    const path = join(workdir, rel);
    // a changed ignore file changes what else git lists
    seen.set(path, seenNow(fs, path, statText(fs, path), now, basename(rel) === ".gitignore" ? undefined : rel));
  }
  for (const dir of tree.dirs) {
    const stat = statText(fs, dir);
    // a directory changed within the granularity could gain an entry unseen: then no watch
    if (isRacy(stat, now)) return;
    seen.set(dir, { stat });
  }
  // ignore files git does not list (an ignored one still rules its folder)
  for (const path of [...tree.ignoreFiles, ...extra]) {
    const stat = statText(fs, path);
    seen.set(path, isRacy(stat, now) ? { stat, hash: contentHash(fs, path, stat) } : { stat });
  }
  const judge = view?.raw && !tree.attributes;
  watched.set(index, { workdir, indexStat: statText(fs, index), answer: [...answer].sort(), seen, entries: judge ? view.entries : undefined });
  while (watched.size > KEEP) watched.delete(watched.keys().next().value!);
}

/**
 * The workdir and every folder under it (`.git` and phaseloop's own left out), the ignore
 * files among them, and whether any attributes file is there; undefined past DIR_LIMIT.
 */
function walk(files: HostFiles, workdir: string): { dirs: string[]; ignoreFiles: string[]; attributes: boolean } | undefined {
  const dirs = [workdir];
  const ignoreFiles: string[] = [];
  let attributes = false;
  for (let i = 0; i < dirs.length; i++) {
    let entries;
    try {
      entries = files.readdirTypes(dirs[i]!);
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (entry.name === ".gitignore") ignoreFiles.push(join(dirs[i]!, entry.name));
      if (entry.name === ".gitattributes") attributes = true;
      if (!entry.isDirectory() || entry.name === ".git" || (i === 0 && entry.name === ".phaseloop")) continue;
      dirs.push(join(dirs[i]!, entry.name));
      if (dirs.length > DIR_LIMIT) return undefined;
    }
  }
  return { dirs, ignoreFiles, attributes };
}
