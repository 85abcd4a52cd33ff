/**
 * Private copies of a user's folder, for the run's agent state (run/agent-state.ts): a
 * folder of this user's own made 0700, and a copy into it that follows no link: files by
 * content (regular files only, up to a size, 0600), folders as folders, a link as the link.
 */
import { chmodSync, closeSync, constants, copyFileSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readlinkSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

/** Make `dir` (in `base`, made 0700 with its parents) a private folder (0700) and check it is a real folder of this user. */
export function privateFolder(base: string, dir: string): void {
  mkdirSync(base, { recursive: true, mode: 0o700 });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || (process.getuid !== undefined && st.uid !== process.getuid())) throw new Error(`${dir} is not a folder of this user's own`);
  chmodSync(dir, 0o700);
}

/**
 * Copy a folder: files by content, folders as folders, a link as the link (what it names is
 * not copied), never through a link; what `skip` names at the top is left out, and so is a
 * file larger than `cap`. A folder that cannot be read yet is made empty.
 */
export function copyPrivately(from: string, to: string, skip: ReadonlySet<string>, cap: number): void {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  let entries;
  try {
    entries = readdirSync(from, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    if (skip.has(entry.name)) continue;
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory()) copyPrivately(src, dst, new Set(), cap);
    else if (entry.isFile()) copyFilePrivately(src, dst, cap);
    else if (entry.isSymbolicLink()) {
      try {
        symlinkSync(readlinkSync(src), dst);
      } catch {
        // left out
      }
    }
  }
}

/** Copy one regular file (never through a link, never over a file already there), 0600; left out when it is not one or is over `cap`. */
export function copyFilePrivately(src: string, dst: string, cap: number): void {
  try {
    const fd = openSync(src, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > cap) return;
    } finally {
      closeSync(fd);
    }
    copyFileSync(src, dst, constants.COPYFILE_EXCL);
    chmodSync(dst, 0o600);
  } catch {
    // unreadable or gone: left out
  }
}
