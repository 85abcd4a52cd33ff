/**
 * The checkpoint file, replaced on every transition. Readers see the old or
 * the new content, never a torn one: the new content goes to
 * `state.json.next`, then replaces the old file by rename.
 *
 * Renaming over an existing file makes ext4 flush the new data first (its
 * replace-via-rename safeguard), which costs more than the rest of a
 * transition; removing the old file first avoids that. At every instant
 * either the checkpoint or its complete `.next` file exists, and
 * `readCheckpointFile` falls back to the latter, so a crash at any point
 * still leaves a whole checkpoint. Creating a file is the slowest part of the
 * write, so `prepare()` creates the next one ahead of time, while a phase runs.
 *
 * With a journal (`state.journal`, the run's checkpoint), replacing the file
 * is taken off the loop's path altogether: `record` appends the checkpoint to
 * the journal as one line, one write, which is all that must be on disk
 * before the next phase starts; `settle`, called while that phase runs,
 * replaces the file with it and empties the journal. The journal's last
 * whole line is therefore always the newest checkpoint there is, and readers
 * take it before the file; a line torn by a crash is not whole and is passed
 * over, as a torn `.next` is.
 */
import type { FileHandle, HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";

/** The journal that goes with a checkpoint file: `state.json` → `state.journal`. */
export function journalPath(path: string): string {
  return `${path.replace(/\.json$/, "")}.journal`;
}

export class CheckpointFile {
  readonly path: string;
  private readonly next: string;
  private nextFd: FileHandle | undefined;
  private readonly journal: string | undefined;
  private journalFd: FileHandle | undefined;
  private readonly files: HostFiles;
  /** The checkpoint recorded in the journal and not yet in the file. */
  private unsettled: string | undefined;
  constructor(path: string, options: { journal?: boolean; files?: HostFiles } = {}) {
    this.path = path;
    this.files = options.files ?? nodeFiles;
    this.next = `${path}.next`;
    this.journal = options.journal ? journalPath(path) : undefined;
  }
  /**
   * After a crash, the newest checkpoint may be only in the journal, or only
   * in the complete `.next` (a crash between removing the old file and
   * renaming the new one): it is put in place first, before the next `write`
   * truncates `.next`. A journal holding only a torn line is emptied. A
   * `.next` that is not whole JSON (prepared but unused, or torn while the
   * very first file was written) stays where it is, for the readers to judge.
   */
  recover(): void {
    const files = this.files;
    const recorded = this.journal ? lastJournalLine(this.journal, files) : undefined;
    if (recorded !== undefined) return this.write(recorded);
    // a journal holding only a torn line: emptied, or the next line appended would be glued to it and unreadable
    if (this.journal && (files.lstat(this.journal)?.size ?? 0) > 0) this.emptyJournal();
    if (files.lstat(this.path)) return;
    try {
      if (!files.lstat(this.next)?.isFile()) return;
      JSON.parse(files.readText(this.next));
    } catch {
      return;
    }
    files.rename(this.next, this.path);
  }
  /** Create the (empty) next file now, so that `write` need not. */
  prepare(): void {
    if (this.nextFd !== undefined) return;
    try {
      this.nextFd = this.openNext();
    } catch {
      // `write` tries again, where a failure is reported
    }
  }
  /**
   * The next file is phaseloop's own scratch file: never followed through a
   * link (which could point at anything), and whatever is in its place that
   * is not a plain file (a link, a directory) is removed first.
   */
  private openNext(): FileHandle {
    return this.files.openWrite(this.next, { noFollow: true, replaceNonFile: true });
  }
  /** Replace the file with `data` now (and empty the journal, which it makes stale). */
  write(data: string): void {
    const fd = this.nextFd ?? this.openNext();
    this.nextFd = undefined;
    try {
      fd.write(data);
    } finally {
      fd.close();
    }
    try {
      this.files.remove(this.path);
    } catch {
      // the first checkpoint: nothing to remove
    }
    this.files.rename(this.next, this.path);
    this.unsettled = undefined;
    this.emptyJournal();
  }
  /**
   * Make `data` the checkpoint: appended to the journal where there is one
   * (the file follows at `settle`), else written to the file at once. `data`
   * is JSON text, which holds no raw newline.
   */
  record(data: string): void {
    if (this.journal === undefined) return this.write(data);
    this.journalFd ??= openJournal(this.journal, this.files);
    this.journalFd.write(`${data}\n`);
    this.unsettled = data;
  }
  /** Bring the file up to the last recorded checkpoint. */
  settle(): void {
    if (this.unsettled !== undefined) this.write(this.unsettled);
  }
  private emptyJournal(): void {
    if (this.journal === undefined) return;
    this.journalFd ??= openJournal(this.journal, this.files);
    this.journalFd.truncate(0);
  }
  /** Settle what was recorded, and remove a prepared, unused next file. */
  close(): void {
    this.settle();
    if (this.journalFd !== undefined) {
      this.journalFd.close();
      this.journalFd = undefined;
    }
    if (this.nextFd === undefined) return;
    this.nextFd.close();
    this.nextFd = undefined;
    try {
      this.files.remove(this.next);
    } catch {
      // already gone
    }
  }
}

/** The journal opened for appending, made if missing. Never through a link: whatever is in its place that is not a plain file is removed first. */
function openJournal(path: string, files: HostFiles): FileHandle {
  return files.openAppend(path, { noFollow: true, replaceNonFile: true });
}

/** The last whole line of a journal (ended by its newline, and JSON), or undefined. */
export function lastJournalLine(path: string, files: HostFiles = nodeFiles): string | undefined {
  let text: string;
  try {
    if (!files.lstat(path)?.isFile()) return undefined;
    text = files.readText(path);
  } catch {
    return undefined;
  }
  let end = text.lastIndexOf("\n");
  while (end > 0) {
    const start = text.lastIndexOf("\n", end - 1) + 1;
    const line = text.slice(start, end);
    try {
      JSON.parse(line);
      return line;
    } catch {
      // not whole: the line before it
    }
    end = start - 1;
  }
  return undefined;
}

/**
 * The newest checkpoint text there is for `path`, and the file it came from:
 * the journal's last whole line, else the file, else its complete `.next`.
 */
export function readCheckpointSource(path: string, files: HostFiles = nodeFiles): { text: string; file: string } | undefined {
  const journal = journalPath(path);
  const recorded = lastJournalLine(journal, files);
  if (recorded !== undefined) return { text: recorded, file: journal };
  for (const p of [path, `${path}.next`]) {
    try {
      return { text: files.readText(p), file: p };
    } catch {
      // try the next
    }
  }
  return undefined;
}

export function readCheckpointFile(path: string, files: HostFiles = nodeFiles): string | undefined {
  return readCheckpointSource(path, files)?.text;
}
