/**
 * Whether anything in a large work tree changed since git last answered, told
 * by the kernel instead of asked of git. The stat watch (stat-watch.ts) covers
 * small trees; beyond its limit, stat'ing every file costs as much as `git
 * status` itself, and a loop of two phases asks git twice per iteration. On
 * Linux, every folder of the tree gets an inotify watch (through `fs.watch`):
 * a folder's watch reports every entry of it that is created, removed, moved,
 * written or has its mode changed, so a tree whose watches reported nothing
 * since git's answer has the same answer.
 *
 * Events come to the event loop after the writes that caused them. Before an
 * answer is trusted, `settle()` writes a file in phaseloop's own folder, which
 * is watched too, and waits for its event: the kernel queues events in order,
 * so once it arrives, every earlier write's has. An answer is reused only when
 * a settle finished after it and no event came since. Folders made later are
 * watched as their creation is reported; anything the watch cannot follow (a
 * watch that fails, the kernel's watch limit, an event for a folder it cannot
 * read) ends the watch for good, and git is asked every time, as before.
 *
 * Outside git the answer is a file snapshot, and the watch also tells which
 * folders had events since a mark, with the entries they named
 * (`changedSince`): the snapshot then re-reads those alone
 * (snapshot-update.ts).
 *
 * Node on Linux only: elsewhere `fs.watch` does not report a folder's entries
 * this way (macOS) or costs a descriptor per folder.
 */
import { join } from "node:path";
import type { Host, HostFiles, Watcher } from "../host/host.ts";

/** Trees with more folders than this are not watched (an ignored node_modules, say). */
const MAX_DIRS = 20_000;
/** How long a settle waits for its own event before the watch is given up. */
const SETTLE_MS = 1000;

/** Where things stood when an answer was asked for: events counted, settles finished. */
export interface WatchMark {
  generation: number;
  settles: number;
}

interface Answer extends WatchMark {
  answer: unknown;
  question: string;
}

/**
 * A folder's events (since it was first named, or since too many names): the
 * generation of its last event, each entry named with its last event's, and
 * the entries that were watched folders when an event named them (so a
 * snapshot may hold files below them) with that event's.
 */
export interface FolderEvents {
  generation: number;
  names: Map<string, number>;
  folders: Map<string, number>;
}

/** Folders with events kept apart; beyond, only "something changed" is known. */
const MAX_EVENT_FOLDERS = 4096;
/** Entry names kept per folder. */
const MAX_NAMES = 1024;
/**
 * Events since a mark beyond which the folders they named are not taken to
 * be all. The kernel drops events when its queue overflows, and libuv drops
 * the overflow notice: an overflow since a mark means the queue held
 * max_queued_events events at once after it, all delivered after the mark,
 * so a count well under that is a look without one. (Events still queued for
 * a watch ended meanwhile, a folder made, moved or removed, are not counted;
 * an overflow made of those alone would go unseen.)
 */
let eventLimit: number | undefined;

export class TreeWatch {
  private readonly watchers = new Map<string, Watcher>();
  private generation = 0;
  private settles = 0;
  private broken = false;
  private readonly answers = new Map<string, Answer>();
  /** Folders whose entries had events, by absolute path. */
  private readonly events = new Map<string, FolderEvents>();
  /** Marks before this generation cannot be told which folders changed since (events were forgotten, or one named nothing). */
  private floor = 0;
  private readonly sentinelDir: string;
  private sentinelCount = 0;
  private waiting: { name: string; done: () => void } | undefined;

  private readonly host: Host;
  private readonly workdir: string;
  /** Folder names not watched anywhere (what the measurement never looks into). */
  private readonly skip: ReadonlySet<string>;

  private constructor(host: Host, workdir: string, skip: ReadonlySet<string>) {
    this.host = host;
    this.workdir = workdir;
    this.skip = skip;
    this.sentinelDir = join(workdir, ".phaseloop", "watch");
  }

  /** A watch on every folder of the tree (not `.git`, not `.phaseloop`), or undefined where it cannot be had (a host that cannot watch folders). */
  static start(host: Host, workdir: string, skip: ReadonlySet<string> = new Set()): TreeWatch | undefined {
    if (!host.files.watchEntries || !isFolder(host.files, workdir)) return undefined;
    const w = new TreeWatch(host, workdir, skip);
    try {
      host.files.mkdir(w.sentinelDir);
      w.add(w.sentinelDir, true);
      if (!w.addTree(workdir)) {
        w.close();
        return undefined;
      }
    } catch {
      w.close();
      return undefined;
    }
    return w;
  }

  /**
   * The answer kept under `key` (git's for an index, a snapshot of the tree), if it was
   * given to the same question (the index's stat, say), nothing has changed since, and a
   * settle came after. Answers are shared, not copied: callers do not change them.
   */
  answerFor<T>(key: string, question: string): T | undefined {
    const a = this.answers.get(key);
    if (this.broken || !a || a.question !== question || a.generation !== this.generation || this.settles <= a.settles) return undefined;
    return a.answer as T;
  }

  /** The answer last kept under `key` for `question`, with its mark, if a settle came after it (events since or not). */
  lastAnswer<T>(key: string, question: string): { answer: T; at: WatchMark } | undefined {
    const a = this.answers.get(key);
    if (this.broken || !a || a.question !== question || this.settles <= a.settles) return undefined;
    return { answer: a.answer as T, at: { generation: a.generation, settles: a.settles } };
  }

  /**
   * The folders whose entries had events since `at` (a mark a settle came
   * after), each with the names its events gave: every entry of a folder
   * that changed since is named there, with names of earlier changes too.
   * Undefined when it cannot be told.
   */
  changedSince(at: WatchMark): Map<string, FolderEvents> | undefined {
    if (this.broken || this.settles <= at.settles || at.generation < this.floor || this.generation - at.generation > (eventLimit ??= Math.min(8192, Math.floor(queuedEventLimit(this.host.files) / 2)))) return undefined;
    const out = new Map<string, FolderEvents>();
    if (this.generation === at.generation) return out;
    for (const [dir, e] of this.events) if (e.generation > at.generation) out.set(dir, e);
    return out;
  }

  /** Where things stand before git is asked: keep with its answer. */
  mark(): WatchMark {
    return { generation: this.generation, settles: this.settles };
  }

  remember(key: string, question: string, answer: unknown, at: WatchMark): void {
    if (this.broken) return;
    this.answers.set(key, { answer, question, ...at });
    if (this.answers.size > 8) this.answers.delete(this.answers.keys().next().value!);
  }

  /** Every event of a write made before this call has been counted once it resolves. */
  async settle(): Promise<void> {
    if (this.broken) return;
    const { files, clock } = this.host;
    const name = `settle-${this.host.pid}-${++this.sentinelCount}`;
    let timer: unknown;
    const arrived = new Promise<boolean>((resolve) => {
      this.waiting = { name, done: () => resolve(true) };
      timer = clock.setTimer(() => resolve(false), SETTLE_MS);
    });
    try {
      files.writeText(join(this.sentinelDir, name), "");
    } catch {
      this.giveUp();
    }
    const ok = this.broken ? false : await arrived;
    clock.clearTimer(timer);
    this.waiting = undefined;
    files.remove(join(this.sentinelDir, name), { force: true });
    if (ok) this.settles++;
    else this.giveUp();
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    this.answers.clear();
  }

  private giveUp(): void {
    this.broken = true;
    this.close();
  }

  /** Watch `dir` and every folder below it; false past MAX_DIRS. */
  private addTree(dir: string): boolean {
    const queue = [dir];
    for (let i = 0; i < queue.length; i++) {
      const d = queue[i]!;
      if (this.watchers.has(d)) continue;
      if (this.watchers.size >= MAX_DIRS) return false;
      if (!isFolder(this.host.files, d)) continue; // gone meanwhile: its parent's watch reported it
      this.add(d, false);
      let entries;
      try {
        entries = this.host.files.readdirTypes(d);
      } catch {
        continue;
      }
      for (const e of entries) {
        if (!e.isDirectory()) continue;
        if (e.name === ".git" || this.skip.has(e.name) || (d === this.workdir && e.name === ".phaseloop")) continue;
        queue.push(join(d, e.name));
      }
    }
    return true;
  }

  /** Stop watching `dir` and the folders below it. */
  private drop(dir: string): void {
    for (const [path, w] of this.watchers) {
      if (path !== dir && !path.startsWith(`${dir}/`)) continue;
      w.close();
      this.watchers.delete(path);
    }
  }

  /**
   * An entry of a watched folder changed. A folder there is watched anew, with
   * all it holds: it may be new, or removed and made again (often with the same
   * inode number), which leaves the old watch blind. Such events (a folder
   * made, removed, moved or its mode changed) are rare; writes inside a folder
   * are told by its own watch.
   */
  private entryChanged(path: string): void {
    this.drop(path);
    if (!isFolder(this.host.files, path)) return;
    try {
      if (!this.addTree(path)) this.giveUp();
    } catch {
      this.giveUp(); // a folder it could not watch (the kernel's limit): git answers from now on
    }
  }

  /** An event in `dir` named `name` (before the watches below it change). */
  private record(dir: string, name: string): void {
    let e = this.events.get(dir);
    if (!e) {
      if (this.events.size >= MAX_EVENT_FOLDERS) {
        this.events.clear();
        this.floor = this.generation;
      }
      this.events.set(dir, (e = { generation: 0, names: new Map(), folders: new Map() }));
    }
    if (e.names.size >= MAX_NAMES) {
      e.names.clear();
      e.folders.clear();
      this.floor = this.generation;
    }
    e.generation = this.generation;
    e.names.set(name, this.generation);
    const path = join(dir, name);
    if (this.watchers.has(path)) e.folders.set(name, this.generation);
  }

  private add(dir: string, sentinel: boolean): void {
    const onEvent = (name: string | null) => {
      if (sentinel) {
        // phaseloop's own folder: only the awaited settle file counts
        if (this.waiting && name === this.waiting.name) this.waiting.done();
        return;
      }
      if (dir === this.workdir && name === ".phaseloop") return;
      this.generation++;
      if (name === null) {
        this.floor = this.generation; // an event that names nothing: which folders changed is not known
        return;
      }
      this.record(dir, name);
      if (name === ".git" || this.skip.has(name)) return;
      try {
        this.entryChanged(join(dir, name));
      } catch {
        this.giveUp(); // never a crash of the run: git answers from now on
      }
    };
    const w: Watcher = this.host.files.watchEntries!(dir, onEvent, () => {
      // the folder went away (its parent's watch told of it), or the kernel gave up on it
      if (this.watchers.get(dir) === w) this.drop(dir);
      this.generation++;
      this.floor = this.generation;
      if (dir === this.workdir || sentinel) this.giveUp();
    });
    this.watchers.set(dir, w);
  }
}

/** Whether the path is a folder (not a link to one); false when it cannot be looked at. */
function isFolder(files: HostFiles, path: string): boolean {
  try {
    return files.lstat(path)?.isDirectory() ?? false;
  } catch {
    return false;
  }
}

/** The kernel's queue length per inotify instance (16,384 unless set). */
function queuedEventLimit(files: HostFiles): number {
  try {
    return Number(files.readText("/proc/sys/fs/inotify/max_queued_events")) || 16_384;
  } catch {
    return 16_384;
  }
}

/** The watches by host (its files) and workdir (null: tried, cannot be had). */
const watchesByHost = new WeakMap<HostFiles, Map<string, TreeWatch | null>>();

function watchesOf(host: Host): Map<string, TreeWatch | null> {
  let watches = watchesByHost.get(host.files);
  if (!watches) watchesByHost.set(host.files, (watches = new Map()));
  return watches;
}

/** Whether a watch of the workdir may still be started (none was tried yet). */
export function mayStartTreeWatch(host: Host, workdir: string): boolean {
  return !watchesOf(host).has(workdir);
}

/** The tree watch of a workdir; started on first use when `start` says so. */
export function treeWatchFor(host: Host, workdir: string, start = false, skip?: ReadonlySet<string>): TreeWatch | undefined {
  const watches = watchesOf(host);
  const known = watches.get(workdir);
  if (known !== undefined || !start) return known ?? undefined;
  const w = TreeWatch.start(host, workdir, skip) ?? null;
  watches.set(workdir, w);
  return w ?? undefined;
}

/** End the workdir's watch; a later `treeWatchFor(host, workdir, true)` may start one again. */
export function stopTreeWatch(host: Host, workdir: string): void {
  const watches = watchesOf(host);
  watches.get(workdir)?.close();
  watches.delete(workdir);
}

/** Let every write made so far in the workdir be counted (nothing to do without a watch). */
export async function settleTreeWatch(host: Host, workdir: string): Promise<void> {
  await watchesOf(host).get(workdir)?.settle();
}
