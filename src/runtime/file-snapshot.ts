/**
 * The measure outside git: a walk of the workdir recording a content hash
 * per file (a symlink by its target). Hashes are cached by stat, so a file
 * is read again only when it changed.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { statWalk } from "./stat-walk.ts";

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

function contentHash(path: string, st: { size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  const key = `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
  const hit = hashCache.get(path);
  if (hit?.key === key) return hit.hash;
  const hash = createHash("sha1").update(readFileSync(path)).digest("hex");
  const settled = Date.now() - SETTLED_MS;
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
}

/** Files under `dir`, by path relative to `base` with `/` separators (`prefix` is prepended). */
export function snapshotFiles(dir: string, options: SnapshotOptions, prefix = "", files: Record<string, string> = {}): Record<string, string> {
  // a whole tree is listed by find, a small one (an ignored folder) walked here
  const listed = prefix === "" ? statWalk(dir, options.skip) : undefined;
  if (listed) {
    const statOnly = options.statOnly ? [...options.statOnly] : [];
    for (const e of listed) {
      const byStat = options.hash === false || statOnly.some((name) => e.path.startsWith(`${name}/`) || e.path.includes(`/${name}/`));
      try {
        files[e.path] = entryOf(join(dir, e.path), e, byStat, e.link);
      } catch {
        // vanished, or unreadable, as in the walk below
      }
    }
    return files;
  }
  const walk = (abs: string, rel: string, byStat: boolean) => {
    let entries;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
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
        const st = lstatSync(full);
        files[path] = entryOf(full, st, byStat, e.isSymbolicLink() ? readlinkSync(full) : undefined);
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
export function pathState(full: string): string {
  try {
    const st = lstatSync(full);
    if (st.isDirectory()) return `dir:${statKey(st)}`;
    return entryOf(full, st, false, st.isSymbolicLink() ? readlinkSync(full) : undefined);
  } catch {
    return "-";
  }
}

/** A file as a snapshot records it: by content hash and executable bit, a link by its target, by stat when large, special or asked. */
function entryOf(full: string, st: { mode: number; size: number; mtimeMs: number; ctimeMs: number; ino: number }, byStat: boolean, link: string | undefined): string {
  if (link !== undefined) return `link:${link}`;
  // the mode counts: an executable bit set is a change
  if (byStat || (st.mode & 0o170000) !== 0o100000 || st.size > HASH_LIMIT) return statKey(st);
  return ((st.mode & 0o111) !== 0 ? "x" : "") + contentHash(full, st);
}

/** Paths whose entries differ between two snapshots (added, changed or removed), sorted. */
export function diffSnapshots(before: Record<string, string>, after: Record<string, string>): string[] {
  const changed = new Set<string>();
  for (const [p, h] of Object.entries(after)) if (before[p] !== h) changed.add(p);
  for (const p of Object.keys(before)) if (!(p in after)) changed.add(p);
  return [...changed].sort();
}
