/**
 * The measure outside git: a walk of the workdir recording a content hash
 * per file (a symlink by its target). Hashes are cached by stat, so a file
 * is read again only when it changed.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import { keepListing, readKeptListing, type ListedEntry } from "./kept-listing.ts";
import { parseStat, statWalk } from "./stat-walk.ts";

const HASH_LIMIT = 8 * 1024 * 1024;
const SETTLED_MS = 1000;

/**
 * Content hashes by absolute path, with the stat they were taken under. A file
 * whose size, times and inode are unchanged is not read again; as git does
 * with its index, a file changed in the last second is never trusted this
 * way (file times are coarse, and two same-size writes within one tick look
 * alike), and any write changes ctime, which no program can set back.
 */
const hashCache = new Map<string, { key: string; hash: string }>();

function contentHash(host: Host, path: string, st: { size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  const key = `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
  const hit = hashCache.get(path);
  if (hit?.key === key) return hit.hash;
  const hash = createHash("sha1").update(host.files.readBytes(path)).digest("hex");
  const settled = host.clock.now() - SETTLED_MS;
  if (st.mtimeMs < settled && st.ctimeMs < settled) hashCache.set(path, { key, hash });
  else hashCache.delete(path);
  return hash;
}

/** What a file's stat says without reading it: type, mode, size, times, inode. */
export function statKey(st: { mode: number; size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  return `${st.mode.toString(8)}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
}

export interface SnapshotOptions {
  /** Directory names never entered, at any depth. */
  skip: ReadonlySet<string>;
  /** Directory names whose files are recorded by stat only, not hashed (large trees such as node_modules). */
  statOnly?: ReadonlySet<string>;
  /** False: record every file by stat only. */
  hash?: boolean;
  /** A file where a whole tree's listing keeps its stat cache between runs (kept-listing.ts). */
  keep?: string;
}

/** Files under `dir`, by path relative to `base` with `/` separators (`prefix` is prepended). */
export function snapshotFiles(host: Host, dir: string, options: SnapshotOptions, prefix = "", files: Record<string, string> = {}): Record<string, string> {
  // a whole tree is listed by find, a small one (an ignored folder) walked here
  if (prefix === "" && listTree(host, dir, options, files)) return files;
  const fs = host.files;
  const walk = (abs: string, rel: string, byStat: boolean) => {
    let entries;
    try {
      entries = fs.readdirTypes(abs);
    } catch {
      return;
    }
    for (const e of entries) {
      const full = join(abs, e.name);
      const path = rel + e.name;
      if (e.isDirectory()) {
        if (!options.skip.has(e.name)) walk(full, `${path}/`, byStat || (options.statOnly?.has(e.name) ?? false));
        continue;
      }
      try {
        const st = fs.lstat(full);
        if (st) files[path] = entryOf(host, full, st, byStat, e.isSymbolicLink() ? fs.readlink(full) : undefined);
      } catch {
        // vanished while we looked
      }
    }
  };
  walk(dir, prefix, options.hash === false);
  return files;
}

/**
 * One path as a snapshot would record it (a file by mode and content hash, a
 * link by its target), a directory by its stat, and `-` when nothing is there.
 */
export function pathState(host: Host, full: string): string {
  try {
    const st = host.files.lstat(full);
    if (!st) return "-";
    if (st.isDirectory()) return `dir:${statKey(st)}`;
    return entryOf(host, full, st, false, st.isSymbolicLink() ? host.files.readlink(full) : undefined);
  } catch {
    return "-";
  }
}

/**
 * Per listed tree and kind of snapshot, each path's entry as last recorded
 * with the stat text it was recorded under. A path whose stat text is the
 * same takes its entry (and its strings) over without parsing or hashing, so
 * a snapshot of an unchanged tree allocates little more than its own object:
 * a loop's snapshots live through a phase, and what they allocate is
 * promoted and collected with the old generation. Trusted, as the hash cache
 * is, only once the entry's times are a second old.
 */
const listings = new Map<string, Map<string, ListedEntry>>();
let listingRound = 0;
/** Entries learned (hashed) in one listing beyond which the kept listing is written again. */
const KEEP_AFTER = 1024;

/** Forget every listing's cache, as a new process starts (for tests). */
export function forgetListings(): void {
  listings.clear();
}

function listTree(host: Host, dir: string, options: SnapshotOptions, files: Record<string, string>): boolean {
  const statOnly = options.statOnly ? [...options.statOnly] : [];
  const key = `${dir}\0${options.hash === false}\0${statOnly.join("/")}\0${[...options.skip].join("/")}`;
  let known = listings.get(key);
  if (!known) listings.set(key, (known = options.keep ? readKeptListing(host.files, options.keep) : new Map()));
  const cache = known;
  const round = ++listingRound;
  const settled = host.clock.now() - SETTLED_MS;
  let count = 0;
  let learned = 0;
  const ok = statWalk(host.processes, dir, options.skip, (stat, path, link) => {
    count++;
    const hit = cache.get(path);
    if (hit !== undefined && hit.stat === stat) {
      hit.seen = round;
      files[hit.path] = hit.value;
      return;
    }
    const st = parseStat(stat);
    const byStat = options.hash === false || statOnly.some((name) => path.startsWith(`${name}/`) || path.includes(`/${name}/`));
    let value: string;
    try {
      value = entryOf(host, join(dir, path), st, byStat, link);
    } catch {
      // vanished, or unreadable, as in the walk
      cache.delete(path);
      return;
    }
    files[path] = value;
    if (st.mtimeMs < settled && st.ctimeMs < settled) {
      cache.set(path, { stat, path, value, seen: round });
      learned++;
    } else cache.delete(path);
  });
  // forget the paths gone since
  if (ok && cache.size > count + 1024) for (const [path, entry] of cache) if (entry.seen !== round) cache.delete(path);
  if (ok && options.keep && learned >= KEEP_AFTER) keepListing(host, options.keep, cache);
  return ok;
}

/** A file as a snapshot records it: by content hash and executable bit, a link by its target, by stat when large, special or asked. */
export function entryOf(host: Host, full: string, st: { mode: number; size: number; mtimeMs: number; ctimeMs: number; ino: number }, byStat: boolean, link: string | undefined): string {
  if (link !== undefined) return `link:${link}`;
  // the mode counts: an executable bit set is a change
  if (byStat || (st.mode & 0o170000) !== 0o100000 || st.size > HASH_LIMIT) return statKey(st);
  return ((st.mode & 0o111) !== 0 ? "x" : "") + contentHash(host, full, st);
}

/**
 * Snapshots made from an earlier one by re-reading some paths: the earlier
 * one (weakly: a chain of them must not keep every snapshot alive) and the
 * paths that may differ from it.
 */
const derived = new WeakMap<Record<string, string>, { from: WeakRef<Record<string, string>>; paths: readonly string[] }>();

/** `files` is `from` with only `paths` looked at again: a diff between them need look at no other. */
export function noteDerived(files: Record<string, string>, from: Record<string, string>, paths: readonly string[]): void {
  derived.set(files, { from: new WeakRef(from), paths });
}

/** The paths that may differ between `before` and `after`, when `after` was derived from it in a few steps. */
function pathsSince(before: Record<string, string>, after: Record<string, string>): Set<string> | undefined {
  const paths = new Set<string>();
  let at = after;
  for (let step = 0; step < 16; step++) {
    const d = derived.get(at);
    const from = d?.from.deref();
    if (!d || !from) return undefined;
    for (const p of d.paths) paths.add(p);
    if (from === before) return paths;
    at = from;
  }
  return undefined;
}

/** Paths whose entries differ between two snapshots (added, changed or removed), sorted. */
export function diffSnapshots(before: Record<string, string>, after: Record<string, string>): string[] {
  if (before === after) return [];
  const candidates = pathsSince(before, after);
  if (candidates) return [...candidates].filter((p) => Object.hasOwn(before, p) !== Object.hasOwn(after, p) || before[p] !== after[p]).sort();
  // no entries arrays: a snapshot has tens of thousands of paths
  const changed: string[] = [];
  for (const p in after) if (Object.hasOwn(after, p) && (!Object.hasOwn(before, p) || before[p] !== after[p])) changed.push(p);
  for (const p in before) if (Object.hasOwn(before, p) && !Object.hasOwn(after, p)) changed.push(p);
  return changed.sort();
}
