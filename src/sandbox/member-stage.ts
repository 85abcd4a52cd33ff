/**
 * Members of a parallel group run at once in the same workdir, and the kernel binds folders,
 * not globs: member A allowed `src/a.txt` and member B allowed `src/b*.txt` both need `src/`
 * writable, and a file that appears there could be either one's. Looked at afterwards, who
 * wrote it cannot be told. So a member never writes a folder another member may also write:
 * it writes its own staging copy of that folder, bound over the real one in its fence, and
 * after each of its processes only what its own globs allow is carried over into the workdir;
 * the rest is its refusal, and never reaches the workdir. Inside the staged folder, what the
 * member cannot write at all is the real entry bound read-only, and a folder only it may write
 * is the real folder bound writable (what lands there can only be its own).
 *
 * Pure: globs and relative paths in, decisions out. A glob is judged by its literal leading
 * folders, so the answers err towards "may reach", which costs a copy, never soundness.
 */

/** What a set of globs may write at or below a folder. */
export type Reach = "none" | "ancestor" | "within";

const GLOB_CHARS = /[*?[\]{}()!+@]/;

function partsOf(path: string): string[] {
  return path.split("/").filter((p) => p !== "" && p !== ".");
}

function startsWith(list: readonly string[], prefix: readonly string[]): boolean {
  return prefix.length <= list.length && prefix.every((p, i) => list[i] === p);
}

/**
 * Whether `globs` may write `rel` or something below it: `within` when a glob may match `rel`
 * itself or anything under it, `ancestor` when `rel` is only a folder on the way to what a glob
 * names, `none` when no glob can reach it. `rel` is relative to the workdir ("" for it).
 */
export function reach(globs: readonly string[], rel: string): Reach {
  const at = partsOf(rel);
  let found: Reach = "none";
  for (const glob of globs) {
    const parts = partsOf(glob);
    if (parts.includes("..")) continue;
    const open = parts.findIndex((p) => GLOB_CHARS.test(p));
    const fixed = open < 0 ? parts : parts.slice(0, open);
    if (open < 0 ? fixed.length === at.length && startsWith(at, fixed) : startsWith(at, fixed)) return "within";
    if (at.length < fixed.length && startsWith(fixed, at)) found = "ancestor";
  }
  return found;
}

/**
 * Whether the member must stage the folder `rel` it may write (another member may write
 * there too, or below it).
 */
export function mustStage(rel: string, others: readonly string[]): boolean {
  return reach(others, rel) !== "none";
}

export type EntryKind = "dir" | "file" | "link" | "other";

/**
 * How an entry of a staged folder appears in the member's fence: the real entry bound
 * read-only (the member may not write it), the real folder bound writable (only this member
 * may write there), a copy (a file or link it may write), or a folder of the staging copy
 * whose entries are decided one by one.
 */
export type EntryPlan = "readonly" | "direct" | "copy" | "descend";

/** Folders of the workdir that no member writes, whatever its globs say. */
const NEVER = new Set([".git", ".phaseloop"]);

export function planEntry(rel: string, kind: EntryKind, own: readonly string[], others: readonly string[]): EntryPlan {
  if (NEVER.has(rel) || kind === "other") return "readonly";
  const mine = reach(own, rel);
  if (mine === "none") return "readonly";
  if (kind !== "dir") return "copy";
  return reach(others, rel) === "none" ? "direct" : "descend";
}

/** A folder a member works on through its staging copy (absolute paths). */
export interface StagedDir {
  /** The real folder in the workdir. */
  real: string;
  /** Its staging copy, bound over it in the fence. */
  stage: string;
  /** Real entries inside it bound read-only over the copy. */
  readonly: string[];
  /** Real folders inside it bound writable over the copy. */
  direct: string[];
}
