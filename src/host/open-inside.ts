/**
 * Paths a tool or a template gives, opened inside the workdir and nowhere
 * else. The path is resolved once, component by component: a symlink is
 * followed only when it leads inside the workdir (and, for agents, not into
 * `.git` or `.phaseloop`); a dangling one is never written through. Then the
 * resolved path is opened without following a link, and what was opened is
 * checked again (its real path through /proc on Linux, its inode elsewhere),
 * so a link swapped in between the check and the open changes nothing.
 *
 * A path is bounded before any of this: at most PATH_MAX_BYTES long, each name
 * at most NAME_MAX_BYTES, at most PATH_MAX_DEPTH directories deep. A path past a
 * bound is refused before the disc is touched, and the work done for one
 * within them is linear in its length (one lstat per component, one mkdir per
 * missing directory), so no single call keeps the event loop (and with it a
 * phase's timeout and Ctrl-C) waiting.
 */
import { closeSync, constants, fstatSync, ftruncateSync, lstatSync, mkdirSync, openSync, readlinkSync, readSync, realpathSync, rmdirSync, writeSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";

export interface InsideOptions {
  /** Top-level names (and `.git` at any depth) the caller may not reach, compared without case. */
  protect?: readonly string[];
}

export type Placed = { ok: true; abs: string; rel: string } | { ok: false; reason: string };

/** Names an agent never reaches: git's data (hooks run code) and phaseloop's own state. */
export const AGENT_PROTECTED = [".git", ".phaseloop"] as const;

const MAX_LINKS = 40;
/** Linux's PATH_MAX: no file of a real project has a longer path. */
export const PATH_MAX_BYTES = 4096;
/** Linux's NAME_MAX for one file or directory name. */
export const NAME_MAX_BYTES = 255;
/** Directories deep, counted from the workdir. */
export const PATH_MAX_DEPTH = 64;

/** Why a path is past a bound, or undefined. Linear in the path's length. */
export function pathBoundReason(path: string): string | undefined {
  const bytes = Buffer.byteLength(path, "utf8");
  if (bytes > PATH_MAX_BYTES) return `the path is ${bytes} bytes long; at most ${PATH_MAX_BYTES} are allowed`;
  let depth = 0;
  for (const c of path.split(/[\\/]+/)) {
    if (c === "" || c === ".") continue;
    if (c === "..") {
      depth = Math.max(0, depth - 1);
      continue;
    }
    if (Buffer.byteLength(c, "utf8") > NAME_MAX_BYTES) return `a name in the path is longer than ${NAME_MAX_BYTES} bytes`;
    if (++depth > PATH_MAX_DEPTH) return `the path is more than ${PATH_MAX_DEPTH} directories deep`;
  }
  return undefined;
}

/**
 * Where `path` (relative to `workdir`, or absolute inside it) really is, with
 * every symlink on the way resolved and checked. The last component may be
 * missing (a file to create); a missing directory on the way is fine too.
 */
export function placeInside(workdir: string, path: string, options: InsideOptions = {}): Placed {
  if (path.includes("\0")) return { ok: false, reason: "a path cannot hold a NUL byte" };
  const bound = pathBoundReason(path);
  if (bound) return { ok: false, reason: bound };
  let root: string;
  try {
    root = realpathSync(workdir);
  } catch {
    return { ok: false, reason: "the workspace does not exist" };
  }
  const start = isAbsolute(path) ? relativeTo(root, path) ?? relativeTo(workdir, path) : path;
  if (start === undefined) return { ok: false, reason: `"${path}" is outside the workspace` };
  const todo = start.split(/[\\/]+/).filter((c) => c !== "" && c !== ".");
  todo.reverse(); // a stack: the next component is popped, a link's target pushed in front
  const done: string[] = [];
  let links = 0;
  // below a missing directory nothing exists: no lstat until a ".." climbs back above it
  let missingFrom = Infinity;
  let steps = 0;
  while (todo.length > 0) {
    const c = todo.pop()!;
    // symlinks may lengthen the walk: it stays bounded all the same
    if (++steps > PATH_MAX_BYTES) return { ok: false, reason: `"${shorten(path)}" has too many components through its symlinks` };
    if (c === "..") {
      if (done.length === 0) return { ok: false, reason: `"${path}" is outside the workspace` };
      done.pop();
      if (done.length < missingFrom) missingFrom = Infinity;
      continue;
    }
    done.push(c);
    if (done.length > PATH_MAX_DEPTH) return { ok: false, reason: `"${shorten(path)}" is more than ${PATH_MAX_DEPTH} directories deep` };
    const refused = protectedReason(done, options, path);
    if (refused) return { ok: false, reason: refused };
    if (done.length > missingFrom) continue;
    const abs = join(root, ...done);
    let st;
    try {
      st = lstatSync(abs);
    } catch {
      missingFrom = done.length; // missing: nothing below it can be a link
      continue;
    }
    if (!st.isSymbolicLink()) continue;
    if (++links > MAX_LINKS) return { ok: false, reason: `"${path}" has too many symlinks` };
    let target: string;
    try {
      target = readlinkSync(abs);
    } catch {
      return { ok: false, reason: `cannot read the symlink "${done.join("/")}"` };
    }
    done.pop();
    if (isAbsolute(target)) {
      const rel = relativeTo(root, target);
      if (rel === undefined) return { ok: false, reason: `"${path}" leads outside the workspace through a symlink` };
      done.length = 0;
      todo.push(...rel.split(/[\\/]+/).filter((x) => x !== "" && x !== ".").reverse());
    } else {
      todo.push(...target.split(/[\\/]+/).filter((x) => x !== "" && x !== ".").reverse());
    }
  }
  const rel = done.join("/");
  return { ok: true, abs: join(root, ...done), rel: rel || "." };
}

function shorten(path: string): string {
  return path.length > 80 ? `${path.slice(0, 60)}…${path.slice(-16)}` : path;
}

function relativeTo(root: string, abs: string): string | undefined {
  const rel = relative(root, abs);
  if (rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return rel;
}

function protectedReason(done: string[], options: InsideOptions, path: string): string | undefined {
  const names = options.protect ?? [];
  if (names.length === 0) return undefined;
  const lower = done.map((c) => c.toLowerCase());
  const top = lower[0]!;
  const hit = names.some((n) => n.toLowerCase() === top) || (names.includes(".git") && lower.includes(".git"));
  return hit ? `"${path}" is not open to the agent (${done.join("/")})` : undefined;
}

export type ReadInside = { ok: true; text: string; rel: string; truncated: boolean } | { ok: false; reason: string; missing?: boolean };

/** Read a regular file inside the workdir, at most `maxBytes` of it. */
export function readInside(workdir: string, path: string, options: InsideOptions & { maxBytes: number }): ReadInside {
  const placed = placeInside(workdir, path, options);
  if (!placed.ok) return placed;
  let fd: number;
  try {
    fd = openSync(placed.abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { ok: false, reason: `"${placed.rel}" does not exist`, missing: true };
    if (code === "ELOOP") return { ok: false, reason: `"${placed.rel}" changed into a symlink` };
    return { ok: false, reason: `cannot open "${placed.rel}": ${(error as Error).message}` };
  }
  try {
    const checked = checkOpened(fd, placed, workdir);
    if (checked) return { ok: false, reason: checked };
    const buf = Buffer.alloc(Math.min(options.maxBytes + 1, Math.max(0, fstatSync(fd).size) + 1));
    let n = 0;
    // a file that grows while it is read is read up to the cap, no further
    let chunk: Buffer = buf;
    while (n < options.maxBytes + 1) {
      if (n === chunk.length) {
        const bigger = Buffer.alloc(Math.min(options.maxBytes + 1, chunk.length * 2 + 1));
        chunk.copy(bigger, 0, 0, n);
        chunk = bigger;
      }
      const got = readSync(fd, chunk, n, chunk.length - n, null);
      if (got === 0) break;
      n += got;
    }
    const truncated = n > options.maxBytes;
    return { ok: true, text: chunk.subarray(0, Math.min(n, options.maxBytes)).toString("utf8"), rel: placed.rel, truncated };
  } finally {
    closeSync(fd);
  }
}

export type WriteInside = { ok: true; rel: string; bytes: number } | { ok: false; reason: string };

/** Create or replace a regular file inside the workdir (directories on the way are made). */
export function writeInside(workdir: string, path: string, data: string, options: InsideOptions = {}): WriteInside {
  const placed = placeInside(workdir, path, options);
  if (!placed.ok) return placed;
  if (placed.rel === ".") return { ok: false, reason: "a file path is required" };
  if (danglingLink(isAbsolute(path) ? path : join(workdir, path))) return { ok: false, reason: `"${path}" is a symlink to nothing: phaseloop does not write through it` };
  // make the missing directories one at a time, linearly: placeInside resolved every link on
  // the way, so a directory that is found to be anything but a directory now was swapped in
  const parts = placed.rel.split("/");
  const made: string[] = [];
  const undo = (w: WriteInside): WriteInside => {
    for (const dir of made.reverse()) {
      try {
        rmdirSync(dir);
      } catch {
        break; // not empty any more: someone else's now
      }
    }
    return w;
  };
  let dir = placed.abs.slice(0, placed.abs.length - placed.rel.length); // the real workdir
  for (let i = 0; i < parts.length - 1; i++) {
    dir = join(dir, parts[i]!);
    const rel = parts.slice(0, i + 1).join("/");
    try {
      mkdirSync(dir);
      made.push(dir);
      continue;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return undo({ ok: false, reason: `cannot make "${rel}": ${(error as Error).message}` });
    }
    let st;
    try {
      st = lstatSync(dir);
    } catch (error) {
      return undo({ ok: false, reason: `cannot make "${rel}": ${(error as Error).message}` });
    }
    if (!st.isDirectory()) return undo({ ok: false, reason: st.isSymbolicLink() ? `"${rel}" changed into a symlink` : `"${rel}" is not a directory` });
  }
  let fd: number;
  try {
    fd = openSync(placed.abs, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o666);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return undo({ ok: false, reason: `"${placed.rel}" is a symlink` });
    return undo({ ok: false, reason: `cannot write "${placed.rel}": ${(error as Error).message}` });
  }
  try {
    const checked = checkOpened(fd, placed, workdir);
    if (checked) return { ok: false, reason: checked };
    const bytes = Buffer.from(data, "utf8");
    // truncate only once the file is known to be the right one
    ftruncateSync(fd, 0);
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off, off);
    return { ok: true, rel: placed.rel, bytes: bytes.length };
  } finally {
    closeSync(fd);
  }
}

function danglingLink(abs: string): boolean {
  try {
    if (!lstatSync(abs).isSymbolicLink()) return false;
  } catch {
    return false;
  }
  try {
    realpathSync(abs);
    return false;
  } catch {
    return true;
  }
}

/** What was opened is a regular file at the placed path: a race swapped nothing in. */
function checkOpened(fd: number, placed: { abs: string; rel: string }, workdir: string): string | undefined {
  const st = fstatSync(fd);
  if (!st.isFile()) return `"${placed.rel}" is not a regular file`;
  try {
    const real = readlinkSync(`/proc/self/fd/${fd}`);
    const root = realpathSync(workdir);
    if (real !== placed.abs || relativeTo(root, real) === undefined) return `"${placed.rel}" moved while it was opened`;
    return undefined;
  } catch {
    // no /proc: compare with what the placed path is now
    try {
      const now = lstatSync(placed.abs);
      return now.ino === st.ino && now.dev === st.dev ? undefined : `"${placed.rel}" moved while it was opened`;
    } catch {
      return `"${placed.rel}" moved while it was opened`;
    }
  }
}
