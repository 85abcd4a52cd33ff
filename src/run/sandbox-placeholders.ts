/**
 * The OS sandbox protects names a command must never create in a directory it may write
 * (`.bashrc`, `.gitconfig`, `.git`, `.vscode`, `.claude/commands`, …): where one is absent,
 * bubblewrap puts an empty file or directory there to mount over, and the library removes it
 * when no sandbox needs it any more. While phases run at once (a parallel group), one
 * member's measurement can see another's placeholders. They are no change of anyone's: no
 * sandboxed command can create those names, and they are gone when the sandboxes are.
 */
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import { PROTECTED_NAMES } from "../sandbox/bwrap-args.ts";

const PROTECTED: readonly string[] = [...PROTECTED_NAMES, ".git"];

/** Whether `rel` (relative to the workdir) names a protected name. */
export function protectedName(rel: string): boolean {
  return PROTECTED.some((name) => rel === name || rel.endsWith(`/${name}`));
}

/** Whether `rel` is, right now, an empty placeholder of a sandbox at a protected name. */
export function isPlaceholder(files: HostFiles, workdir: string, rel: string): boolean {
  if (!protectedName(rel)) return false;
  try {
    const stat = files.lstat(join(workdir, rel));
    // gone already: it was one, and its sandbox removed it
    if (!stat) return true;
    if (stat.isFile()) return stat.size === 0;
    if (stat.isDirectory()) return files.readdir(join(workdir, rel)).length === 0;
    return false;
  } catch {
    // gone already: it was one, and its sandbox removed it
    return true;
  }
}
