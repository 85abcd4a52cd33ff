/**
 * A parallel member's staging copy of a folder another member may also write (see
 * sandbox/member-stage.ts): made before each of its processes, bound over the real folder in
 * its fence, and afterwards what its own globs allow is carried over into the workdir, never
 * through a link; what they do not is refused and stays behind in the copy, which goes.
 */
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, constants, copyFileSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync, writeSync, readSync, fstatSync } from "node:fs";
import { join } from "node:path";
import { planEntry, type EntryKind, type StagedDir } from "../sandbox/member-stage.ts";
import { removeInside } from "./remove-inside.ts";

/** A staged folder with what its copy held when the member started. */
export interface Stage extends StagedDir {
  /** The folder relative to the workdir ("" for the workdir itself). */
  rel: string;
  baseline: Map<string, string>;
}

function kindOf(entry: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }): EntryKind {
  return entry.isSymbolicLink() ? "link" : entry.isDirectory() ? "dir" : entry.isFile() ? "file" : "other";
}

const joinRel = (a: string, b: string) => (a === "" ? b : `${a}/${b}`);

/** Make the staging copy of `real` (the folder `rel` of the workdir) in a new folder under `parent`. */
export function buildStage(workdir: string, rel: string, own: readonly string[], others: readonly string[], parent: string): Stage {
  const real = rel === "" ? workdir : join(workdir, rel);
  const stage = mkdtempSync(join(parent, "stage-"));
  chmodSync(stage, lstatSync(real).mode & 0o7777);
  const readonly: string[] = [];
  const direct: string[] = [];
  const walk = (relDir: string, from: string, to: string) => {
    for (const entry of readdirSync(from, { withFileTypes: true })) {
      const relPath = joinRel(relDir, entry.name);
      const src = join(from, entry.name);
      const dst = join(to, entry.name);
      const kind = kindOf(entry);
      if (kind === "other") continue;
      const plan = planEntry(relPath, kind, own, others);
      if (kind === "link") {
        // a link is copied as the link, whatever the plan: replacing it in the copy is a change to judge
        symlinkSync(readlinkSync(src), dst);
        continue;
      }
      if (plan === "copy") {
        copyFileSync(src, dst, constants.COPYFILE_EXCL);
        chmodSync(dst, lstatSync(src).mode & 0o777);
        continue;
      }
      // a folder to descend, or the place where a real entry is bound (read-only, or writable for this member alone)
      if (kind === "dir") mkdirSync(dst, { mode: lstatSync(src).mode & 0o7777 });
      else closeSync(openSync(dst, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644));
      if (plan === "descend") walk(relPath, src, dst);
      else (plan === "direct" ? direct : readonly).push(src);
    }
  };
  walk(rel, real, stage);
  return { real, stage, rel, readonly, direct, baseline: snapshot(stage) };
}

/** Each entry of a staging copy (relative to it): a folder as such, a file or link by what its stat says. */
function snapshot(stage: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (sub: string) => {
    let entries;
    try {
      entries = readdirSync(join(stage, sub), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const path = joinRel(sub, entry.name);
      if (entry.isDirectory()) {
        out.set(path, "dir");
        walk(path);
        continue;
      }
      try {
        const st = lstatSync(join(stage, path));
        out.set(path, `${st.mode.toString(8)}:${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}${st.isSymbolicLink() ? `>${readlinkSync(join(stage, path))}` : ""}`);
      } catch {
        // gone between the listing and the look
      }
    }
  };
  walk("");
  return out;
}

/**
 * After a process of the member: carry what it changed in the copy into the workdir where
 * `allowed` says its globs allow it (a path relative to the workdir), and name the rest
 * ("write PATH …", "remove PATH …"). The copy is removed.
 */
export function carryStage(workdir: string, staged: Stage, allowed: (rel: string) => boolean): string[] {
  const now = snapshot(staged.stage);
  const refused: string[] = [];
  const rel = (sub: string) => joinRel(staged.rel, sub);
  const abs = (sub: string) => join(workdir, rel(sub));
  try {
    for (const [sub, was] of staged.baseline) {
      if (was === "dir" || now.has(sub)) continue;
      if (allowed(rel(sub))) removeInside(workdir, rel(sub));
      else refused.push(`remove ${abs(sub)} (outside the write globs: not carried over)`);
    }
    for (const [sub, key] of now) {
      if (key === "dir" || staged.baseline.get(sub) === key) continue;
      if (!allowed(rel(sub))) {
        refused.push(`write ${abs(sub)} (outside the write globs: not carried over)`);
        continue;
      }
      if (!placeFile(workdir, rel(sub), join(staged.stage, sub))) refused.push(`write ${abs(sub)} (the way there is not a folder of the workdir: not carried over)`);
    }
  } finally {
    rmSync(staged.stage, { recursive: true, force: true });
  }
  return refused;
}

/**
 * Put the file or link `from` at `rel` in the workdir: every folder on the way made or found
 * as a real folder (never a link), the entry written beside its place and renamed into it, so
 * that a link at the place is replaced, not written through.
 */
function placeFile(workdir: string, rel: string, from: string): boolean {
  const parts = rel.split("/");
  let dir = workdir;
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    try {
      mkdirSync(dir, { mode: 0o755 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") return false;
    }
    try {
      if (!lstatSync(dir).isDirectory()) return false;
    } catch {
      return false;
    }
  }
  const target = join(dir, parts.at(-1)!);
  const temp = join(dir, `.phaseloop-carry-${randomBytes(6).toString("hex")}`);
  const st = lstatSync(from);
  try {
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), temp);
    else copyInto(from, temp, st.mode & 0o777);
    renameSync(temp, target);
    return true;
  } catch {
    rmSync(temp, { force: true });
    return false;
  }
}

function copyInto(from: string, to: string, mode: number): void {
  // never blocks on a FIFO the member made: only a regular file is copied
  const src = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!fstatSync(src).isFile()) throw new Error("not a file");
    const dst = openSync(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
    try {
      const buf = Buffer.allocUnsafe(1 << 16);
      for (;;) {
        const n = readSync(src, buf, 0, buf.length, null);
        if (n === 0) break;
        let off = 0;
        while (off < n) off += writeSync(dst, buf, off, n - off);
      }
    } finally {
      closeSync(dst);
    }
    chmodSync(to, mode);
  } finally {
    closeSync(src);
  }
}
