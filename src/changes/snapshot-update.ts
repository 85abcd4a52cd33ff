/**
 * The file snapshot of a watched tree, brought up to date from the last one
 * instead of listed again. The tree watch names the folders whose entries
 * had events since the last snapshot's mark, and which entries: each such
 * folder's files are read again (stat, and content hash where the stat
 * changed, as `snapshotFiles` does), an entry named that is now a folder is
 * listed whole, one that was a folder loses the files recorded below it, and
 * the rest of the last snapshot is taken as it is. Whenever the watch cannot
 * tell (it saw too much, or lost track), or there is more to read again than
 * a listing would cost, the whole tree is listed as before.
 */
import { join } from "node:path";
import type { DirEntry, Host, HostFiles } from "../host/host.ts";
import { entryOf, noteDerived, snapshotFiles, type SnapshotOptions } from "./file-snapshot.ts";
import type { FolderEvents, TreeWatch } from "./tree-watch.ts";

/** Beyond this many folders with events, the whole tree is listed again. */
const MAX_FOLDERS = 256;
/** Beyond this many entries named by events, the whole tree is listed again. */
const MAX_ENTRIES = 8192;
/** Beyond this many folders made, removed or moved, the whole tree is listed again. */
const MAX_SUBTREES = 64;

/** How a snapshot was had: the last one as it was, the last one with some folders read again, or a listing of the whole tree. */
export type SnapshotLook = "reused" | "updated" | "listed";

/**
 * The snapshot of `workdir` now, from the watch's last one where it can be.
 * Every write made before the call must have been settled (`settle()`).
 */
export function watchedSnapshot(host: Host, workdir: string, watch: TreeWatch, options: SnapshotOptions): { files: Record<string, string>; look: SnapshotLook } {
  const mark = watch.mark();
  const last = watch.lastAnswer<Record<string, string>>("snapshot", "");
  const folders = last && watch.changedSince(last.at);
  if (last && folders?.size === 0) return { files: last.answer, look: "reused" };
  let files = last && folders ? updateSnapshot(host, workdir, last.answer, folders, last.at.generation, options.skip) : undefined;
  const look = files ? "updated" : "listed";
  files ??= snapshotFiles(host, workdir, options);
  watch.remember("snapshot", "", files, mark);
  return { files, look };
}

interface Folder {
  abs: string;
  /** Its files' path prefix in the snapshot: "" for the workdir, else "a/b/". */
  rel: string;
  /** The entries named by events after the mark. */
  names: string[];
  /** Its entries now; undefined when it cannot be read. */
  listed: DirEntry[] | undefined;
}

/**
 * `before` (the snapshot taken at generation `since`) with the folders that
 * had events since read again; undefined when it cannot be done soundly or
 * cheaply.
 */
export function updateSnapshot(host: Host, workdir: string, before: Record<string, string>, events: ReadonlyMap<string, FolderEvents>, since: number, skip: ReadonlySet<string>): Record<string, string> | undefined {
  const fs = host.files;
  if (events.size > MAX_FOLDERS) return undefined;
  const folders: Folder[] = [];
  /** Prefixes whose files are dropped (folders that were there), and folders listed whole (there now, newly or again). */
  const dropped: string[] = [];
  const walked: string[] = [];
  let entries = 0;
  const real = realFolders(fs, workdir);
  for (const [abs, e] of events) {
    const rel = abs === workdir ? "" : abs.startsWith(`${workdir}/`) ? `${abs.slice(workdir.length + 1)}/` : undefined;
    if (rel === undefined) return undefined; // not a folder of this tree
    if (rel.split("/").some((name) => skip.has(name))) continue; // not in the snapshot
    // a watch reached through a link, or a folder whose parent went: not in the tree at this path (the files
    // recorded there went with the folder that held them, which its own parent's events name)
    if (!real(rel)) continue;
    const names: string[] = [];
    for (const [name, generation] of e.names) if (generation > since) names.push(name);
    for (const [name, generation] of e.folders) if (generation > since) dropped.push(`${rel}${name}/`);
    entries += names.length;
    if (entries > MAX_ENTRIES) return undefined;
    let listed: DirEntry[] | undefined;
    try {
      listed = fs.readdirTypes(abs);
    } catch {
      listed = undefined;
    }
    if (listed) {
      const named = new Set(names);
      for (const d of listed) if (d.isDirectory() && named.has(d.name) && !skip.has(d.name)) walked.push(`${rel}${d.name}/`);
    }
    folders.push({ abs, rel, names, listed });
  }
  const drop = outermost(dropped);
  const walk = outermost(walked);
  if (drop.length + walk.length > MAX_SUBTREES) return undefined;
  const below = (rel: string) => drop.some((p) => rel.startsWith(p)) || walk.some((p) => rel.startsWith(p));

  const files: Record<string, string> = {};
  for (const p in before) files[p] = before[p]!;
  const paths: string[] = [];
  // a folder listed whole held nothing before unless it is also one that was there; dropped all the same
  const gone = outermost([...drop, ...walk]);
  if (gone.length > 0) {
    for (const p in files) {
      if (!gone.some((prefix) => p.startsWith(prefix))) continue;
      delete files[p];
      paths.push(p);
    }
  }
  for (const f of folders) {
    if (below(f.rel)) continue; // listed whole below, or gone with a folder above
    if (!f.listed) return undefined; // a folder that cannot be read, and not for a reason the watch saw
    const present = new Set<string>();
    for (const d of f.listed) {
      if (d.isDirectory()) continue;
      const path = f.rel + d.name;
      present.add(d.name);
      paths.push(path);
      const full = join(f.abs, d.name);
      try {
        const st = fs.lstat(full);
        if (st) files[path] = entryOf(host, full, st, false, st.isSymbolicLink() ? fs.readlink(full) : undefined);
        else delete files[path]; // vanished while we looked, as in a listing
      } catch {
        delete files[path]; // vanished while we looked, as in a listing
      }
    }
    for (const name of f.names) {
      if (present.has(name)) continue;
      delete files[f.rel + name];
      paths.push(f.rel + name);
    }
  }
  for (const rel of walk) {
    const found = snapshotFiles(host, join(workdir, rel), { skip }, rel, {});
    for (const p in found) {
      files[p] = found[p]!;
      paths.push(p);
    }
  }
  noteDerived(files, before, paths);
  return files;
}

/** Whether a folder path ("a/b/", "" for the workdir) is one in the tree: each folder on the way one, not a link to one. */
function realFolders(files: HostFiles, workdir: string): (rel: string) => boolean {
  const known = new Map<string, boolean>([["", true]]);
  const real = (rel: string): boolean => {
    let is = known.get(rel);
    if (is !== undefined) return is;
    const parent = rel.slice(0, rel.lastIndexOf("/", rel.length - 2) + 1);
    try {
      // without the trailing slash, which would follow a link
      is = real(parent) && (files.lstat(join(workdir, rel.slice(0, -1)))?.isDirectory() ?? false);
    } catch {
      is = false;
    }
    known.set(rel, is);
    return is;
  };
  return real;
}

/** The prefixes not below another of them. */
function outermost(prefixes: string[]): string[] {
  const out: string[] = [];
  for (const p of [...new Set(prefixes)].sort()) if (!out.some((q) => p.startsWith(q))) out.push(p);
  return out;
}
