/**
 * Removal at phaseloop's own hand, never through a symlink: an agent that may
 * write `.claude` can make it a link to `~/.claude`, and a cleanup of
 * `.claude/commands` would then remove the user's own. Every folder on the
 * way from the workdir to the path must be a real folder inside it; the path
 * itself, a link or not, is removed as the entry it is (a link, not its target).
 */
import { lstatSync, rmSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";

/** Whether every folder between `workdir` and `path` is a real folder (no symlink, nothing outside). */
export function parentsInside(workdir: string, path: string): boolean {
  const rel = isAbsolute(path) ? relative(workdir, path) : path;
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return false;
  const parts = rel.split(sep).filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) return false;
  let dir = workdir;
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    try {
      if (!lstatSync(dir).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * Remove `path` (relative to `workdir`, or absolute inside it) without
 * following a symlink anywhere on the way. Returns false when it was not
 * removed because the way goes through a link or out of the workdir.
 */
export function removeInside(workdir: string, path: string, options: { recursive?: boolean } = {}): boolean {
  if (!parentsInside(workdir, path)) {
    // a path that does not exist needs no removal; one behind a link is refused
    return !existsBehind(workdir, path);
  }
  const full = isAbsolute(path) ? path : join(workdir, path);
  // rmSync removes a final symlink as the link; a recursive removal does not descend through links
  rmSync(full, { force: true, recursive: options.recursive ?? false });
  return true;
}

function existsBehind(workdir: string, path: string): boolean {
  try {
    lstatSync(isAbsolute(path) ? path : join(workdir, path));
    return true;
  } catch {
    return false;
  }
}
