/**
 * The repository's own files (`.git/` without its objects: HEAD, config,
 * refs, packed-refs, hooks, info, the index, logs), kept byte for byte so
 * that a write scope can name and undo what an agent changed there. No write
 * scope ever covers them: a hook or a config entry is code git runs later.
 */
import { Buffer } from "node:buffer";
import { dirname, join, relative, sep } from "node:path";
import type { DirEntry, HostFiles } from "../host/host.ts";
import { statKey } from "./file-snapshot.ts";

// the object stores (the repository's and its submodules'), and a daemon's sockets
const SKIP = new Set(["objects", "fsmonitor--daemon"]);
const KEEP_LIMIT = 64 * 1024 * 1024;

interface Entry {
  key: string;
  mode: number;
  data?: Uint8Array;
  link?: string;
}

/** The files of the repository's directories, by absolute path. */
export type GitInternals = Map<string, Entry>;

/**
 * In a linked worktree (`dirs` is its own git dir, then the common one), the
 * common dir's refs, logs, index, other worktrees and merge state belong to
 * every checkout of the repository: another checkout's commits and merges
 * (a person's, or phaseloop's lanes') are not this workdir's agent's doing.
 * Its config, hooks and info, which git runs or obeys here too, are kept.
 */
const SHARED_ELSEWHERE = new Set(["worktrees", "refs", "logs", "packed-refs", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "index", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE", "COMMIT_EDITMSG", "REBASE_HEAD", "rebase-merge", "rebase-apply", "gc.pid", "gc.log"]);

function skipped(dirs: string[], dir: string, name: string): boolean {
  if (SKIP.has(name)) return true;
  // and the lock files git holds while another checkout changes them (`HEAD.lock` during a merge)
  return dirs.length === 2 && dirs[0] !== dirs[1] && dir === dirs[1] && (SHARED_ELSEWHERE.has(name) || (name.endsWith(".lock") && SHARED_ELSEWHERE.has(name.slice(0, -5))));
}

/** Every file below `dirs` (each once, the skipped ones left out), with its directory entry. */
function eachInternalFile(files: HostFiles, dirs: string[], visit: (full: string, entry: DirEntry) => void): void {
  const seen = new Set<string>();
  const walk = (dir: string) => {
    let entries;
    try {
      entries = files.readdirTypes(dir);
    } catch {
      return;
    }
    for (const e of entries) {
      const full = join(dir, e.name);
      if (skipped(dirs, dir, e.name)) continue;
      if (e.isDirectory()) walk(full);
      else if (!seen.has(full)) {
        seen.add(full);
        visit(full, e);
      }
    }
  };
  for (const dir of new Set(dirs)) walk(dir);
}

/** The files of `dirs` now; entries of `before` whose stat is unchanged are taken over, not read again. */
export function snapshotGitInternals(fs: HostFiles, dirs: string[], before?: GitInternals): GitInternals {
  const files: GitInternals = new Map();
  eachInternalFile(fs, dirs, (full, e) => {
    try {
      const st = fs.lstat(full);
      if (!st) return; // vanished while we looked
      const key = statKey(st);
      const was = before?.get(full);
      if (was?.key === key) return void files.set(full, was);
      const entry: Entry = { key, mode: st.mode & 0o7777 };
      if (e.isSymbolicLink()) entry.link = fs.readlink(full);
      else if (st.size <= KEEP_LIMIT) entry.data = fs.readBytes(full);
      files.set(full, entry);
    } catch {
      // vanished while we looked
    }
  });
  return files;
}

/**
 * Absolute paths changed, created or removed since the snapshot. `same` may
 * call two different byte contents equal (an index whose entries are the
 * same, only refreshed by a `git status`).
 */
export function gitInternalsChanged(files: HostFiles, before: GitInternals, dirs: string[], same?: (path: string, was: Uint8Array) => boolean): string[] {
  const now = snapshotKeys(files, dirs);
  const changed: string[] = [];
  for (const [p, key] of now) {
    const was = before.get(p);
    if (!was) changed.push(p);
    else if (was.key !== key && !sameContent(files, p, was) && !(was.data && same?.(p, was.data))) changed.push(p);
  }
  for (const p of before.keys()) if (!now.has(p)) changed.push(p);
  return changed.sort();
}

function sameContent(files: HostFiles, path: string, was: Entry): boolean {
  try {
    const st = files.lstat(path);
    if (!st || (st.mode & 0o7777) !== was.mode) return false;
    if (was.link !== undefined) return st.isSymbolicLink() && files.readlink(path) === was.link;
    return was.data !== undefined && st.isFile() && Buffer.compare(files.readBytes(path), was.data) === 0;
  } catch {
    return false;
  }
}

function snapshotKeys(files: HostFiles, dirs: string[]): Map<string, string> {
  const keys = new Map<string, string>();
  eachInternalFile(files, dirs, (full) => {
    try {
      const st = files.lstat(full);
      if (st) keys.set(full, statKey(st));
    } catch {
      // vanished
    }
  });
  return keys;
}

/** Put the files back as the snapshot has them; created ones are removed. Returns the paths it could not restore. */
export function restoreGitInternals(files: HostFiles, before: GitInternals, paths: string[]): string[] {
  const failed: string[] = [];
  for (const p of paths) {
    const was = before.get(p);
    try {
      files.remove(p, { force: true, recursive: true });
      if (!was) continue;
      files.mkdir(dirname(p));
      if (was.link !== undefined) files.symlink(was.link, p);
      else if (was.data !== undefined) {
        files.writeBytes(p, was.data, { mode: was.mode });
        files.chmod(p, was.mode);
      } else failed.push(p);
    } catch {
      failed.push(p);
    }
  }
  return failed;
}

/** A path as the workdir names it (`.git/hooks/pre-commit`, or `../.git/config` from a subdirectory). */
export function workdirPath(workdir: string, abs: string): string {
  return relative(workdir, abs).split(sep).join("/");
}
