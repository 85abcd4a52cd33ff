/**
 * A listing's stat cache kept on disk between runs, as git keeps the stat of
 * each file beside its hash in the index: a run's first snapshot of a large
 * folder then hashes only the files whose stat changed since, not every
 * file. An entry is taken over only when the stat text `find` gives now is
 * the one recorded (type, permissions, size, modification and change times
 * to the nanosecond, inode); any write sets the change time, which no
 * program can set back, and only entries whose times were a second old when
 * recorded are kept at all (file-snapshot.ts).
 *
 * The file is `stat NUL path NUL entry NUL` per path after a header line,
 * written to a temporary name and renamed over the old one.
 */
import { dirname } from "node:path";
import type { Host, HostFiles } from "../host/host.ts";

/** One path as last listed. */
export interface ListedEntry {
  stat: string;
  path: string;
  value: string;
  seen: number;
}

const HEADER = "phaseloop listing 1\n";

/** The entries kept in `file`; none when it is missing or not one of ours. */
export function readKeptListing(files: HostFiles, file: string): Map<string, ListedEntry> {
  const out = new Map<string, ListedEntry>();
  let text: string;
  try {
    text = files.readText(file);
  } catch {
    return out;
  }
  if (!text.startsWith(HEADER)) return out;
  const parts = text.slice(HEADER.length).split("\0");
  for (let i = 0; i + 2 < parts.length; i += 3) {
    const path = parts[i + 1]!;
    out.set(path, { stat: parts[i]!, path, value: parts[i + 2]!, seen: 0 });
  }
  return out;
}

/** Keep the entries in `file` for the next run; nothing happens when it cannot be written. */
export function keepListing(host: Host, file: string, entries: ReadonlyMap<string, ListedEntry>): void {
  const chunks: string[] = [HEADER];
  for (const e of entries.values()) {
    // a NUL cannot be in a path, a link's target or a stat; nothing else is needed to split them
    chunks.push(e.stat, "\0", e.path, "\0", e.value, "\0");
  }
  const tmp = `${file}.${host.pid}.tmp`;
  try {
    host.files.mkdir(dirname(file));
    host.files.writeText(tmp, chunks.join(""));
    host.files.rename(tmp, file);
  } catch {
    host.files.remove(tmp, { force: true });
  }
}
