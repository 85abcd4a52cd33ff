/**
 * After a fenced phase: what it made at the protected names that were absent when it started
 * (the fence cannot bind what is not there), found and removed before phaseloop's own git runs
 * in the workdir again, never through a link the phase made on the way. And where paths
 * really are, for the fence's preparation (linux-fence.ts).
 */
import { lstatSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { basename, dirname } from "node:path";

/** Where a path really is (the C library's realpath: one call, not an lstat per component). */
export function realpath(path: string): string | undefined {
  try {
    return realpathSync.native(path);
  } catch {
    return undefined;
  }
}

export type Resolve = (path: string) => string | undefined;

/** realpath, each path resolved once in one wrap. */
export function resolver(): Resolve {
  const seen = new Map<string, string | undefined>();
  return (path) => {
    if (!seen.has(path)) seen.set(path, realpath(path));
    return seen.get(path);
  };
}

/**
 * The protected paths the phase created (they did not exist when it started). Most are in one
 * folder (the workdir): a folder holding several is listed once instead of looking at each.
 */
export function madeProtected(absent: readonly string[]): string[] {
  const byDir = new Map<string, string[]>();
  for (const path of absent) byDir.set(dirname(path), [...(byDir.get(dirname(path)) ?? []), path]);
  const made = new Set<string>();
  for (const [dir, paths] of byDir) {
    const names = paths.length > 2 ? entryNames(dir) : undefined;
    for (const path of paths) if (names === undefined ? present(path) : names.has(basename(path))) made.add(path);
  }
  // in the order given
  return absent.filter((path) => made.has(path));
}

/** A folder's entry names (a link among them as itself), an empty set when it is not there, undefined when it cannot be listed. */
function entryNames(dir: string): Set<string> | undefined {
  try {
    return new Set(readdirSync(dir));
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ENOTDIR" ? new Set() : undefined;
  }
}

function present(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Remove what the phase made at protected names, before phaseloop itself runs git in the
 * workdir again: a `.git` made there would otherwise be a repository whose config (filters,
 * hooks) the agent wrote, and phaseloop's own git would run it outside the sandbox.
 */
export function undoProtected(absent: readonly string[], anchors?: Record<string, { dir: string; real: string }>, made: readonly string[] = madeProtected(absent)): void {
  for (const path of made) {
    // never through a link the phase made on the way (`.claude` → ~/.claude, then `.claude/commands`):
    // from the folder that existed when it started, every folder down to the name must be a
    // real folder; a name that is itself a link goes as the link
    const anchor = anchors?.[path];
    if (anchor !== undefined && !reachedWithoutLinks(dirname(path), anchor)) continue;
    rmSync(path, { recursive: true, force: true });
  }
}

/** For each path, the nearest folder above it that exists now, and its real path. */
export function anchorsOf(paths: readonly string[], resolved: Resolve = resolver()): Record<string, { dir: string; real: string }> {
  const out: Record<string, { dir: string; real: string }> = {};
  // most share a folder (the workdir): each resolved once
  for (const path of paths) {
    let dir = dirname(path);
    for (;;) {
      const real = resolved(dir);
      if (real !== undefined) {
        out[path] = { dir, real };
        break;
      }
      const up = dirname(dir);
      if (up === dir) break;
      dir = up;
    }
  }
  return out;
}

function reachedWithoutLinks(dir: string, anchor: { dir: string; real: string }): boolean {
  for (let d = dir; d !== anchor.dir; d = dirname(d)) {
    if (dirname(d) === d) return false;
    try {
      if (!lstatSync(d).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return realpath(anchor.dir) === anchor.real;
}

