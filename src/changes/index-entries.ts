/**
 * The entries of one of phaseloop's index files as the stat watch needs them:
 * the files git compares with the work tree, and for each whether its state
 * can be compared here (a plain file or symlink at stage 0 that git looks at
 * as any other), with the mode and object id the index holds.
 */
import { createHash } from "node:crypto";
import type { HostFiles } from "../host/host.ts";

export interface IndexEntries {
  /** The files of the index, relative to the workdir. */
  files: string[];
  /**
   * path → "MODE OID" for an entry whose work-tree file differs exactly when its mode or blob
   * does; null for one only git can judge (unmerged, skip-worktree, assume-unchanged, a
   * submodule, an empty blob that may stand for an intent-to-add entry).
   */
  entries: Map<string, string | null>;
}

/** The object ids of an empty blob (SHA-1, SHA-256): an intent-to-add entry carries one too. */
const EMPTY_BLOBS = new Set(["e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"]);
const PLAIN_MODES = new Set(["100644", "100755", "120000"]);

/**
 * Parse `git ls-files -s -v -z` (paths relative to the workdir); phaseloop's own folder is
 * left out. Pure.
 */
export function parseIndexEntries(listing: string): IndexEntries {
  const files: string[] = [];
  const entries = new Map<string, string | null>();
  for (const line of listing.split("\0")) {
    // "TAG MODE OID STAGE\tPATH"
    const tab = line.indexOf("\t");
    if (tab < 0) continue;
    const path = line.slice(tab + 1);
    if (path === ".phaseloop" || path.startsWith(".phaseloop/")) continue;
    const [tag, mode, oid, stage] = line.slice(0, tab).split(" ");
    if (!entries.has(path)) files.push(path);
    const plain = tag === "H" && stage === "0" && PLAIN_MODES.has(mode!) && !EMPTY_BLOBS.has(oid!);
    // an unmerged path has several stages: any of them makes it git's to judge
    entries.set(path, plain && !entries.has(path) ? `${mode} ${oid}` : null);
  }
  return { files, entries };
}

/** The bytes' object id as git names a blob, in the hash of `like` (an object id of the repository). */
export function blobId(content: Uint8Array, like: string): string {
  const hash = createHash(like.length === 64 ? "sha256" : "sha1");
  hash.update(`blob ${content.length}\0`);
  hash.update(content);
  return hash.digest("hex");
}

/** By index file, with the file's stat when it was read. */
const cached = new Map<string, { stat: string; entries: IndexEntries }>();
const KEEP = 8;

/**
 * The entries of the index file `index`, read with `list` (which runs `git ls-files -s -v -z`
 * on it) once per version of the file; undefined when the file is larger than `maxBytes` or
 * git fails.
 */
export function indexEntries(files: HostFiles, index: string, maxBytes: number, list: () => string | undefined): IndexEntries | undefined {
  let stat: string;
  try {
    const st = files.statExact(index);
    if (!st || st.size > BigInt(maxBytes)) return undefined;
    stat = `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}`;
  } catch {
    return undefined;
  }
  const known = cached.get(index);
  if (known?.stat === stat) return known.entries;
  const listing = list();
  if (listing === undefined) return undefined;
  const entries = parseIndexEntries(listing);
  cached.delete(index);
  cached.set(index, { stat, entries });
  while (cached.size > KEEP) cached.delete(cached.keys().next().value!);
  return entries;
}
