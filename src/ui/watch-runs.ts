/**
 * Tells the server when something under `.phaseloop/` may have changed:
 * fs.watch on the folders that can change (the runs folder, the lock's
 * folder, the folders of runs that have not finished, the running phase's
 * folder), each change passed on at most every `debounceMs`, and a slow poll
 * beside it for file systems where watching misses appends. Folders are
 * watched one by one, never a whole tree: a workdir of many finished runs
 * costs nothing.
 */
import { watch, type FSWatcher } from "node:fs";

export class RunsWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly poll: ReturnType<typeof setInterval>;
  private closed = false;
  /** Watching failed somewhere (no inotify left, say): the poll is all there is, so it runs faster. */
  degraded = false;

  private readonly onChange: () => void;
  private readonly debounceMs: number;

  constructor(onChange: () => void, debounceMs = 40, pollMs = 1000) {
    this.onChange = onChange;
    this.debounceMs = debounceMs;
    this.poll = setInterval(() => this.fire(), pollMs);
    this.poll.unref?.();
  }

  /** Watches exactly these folders (adds the new, drops the rest). */
  setFolders(folders: Iterable<string>): void {
    if (this.closed) return;
    const want = new Set(folders);
    for (const [path, w] of this.watchers) {
      if (!want.has(path)) {
        w.close();
        this.watchers.delete(path);
      }
    }
    for (const path of want) {
      if (this.watchers.has(path)) continue;
      try {
        const w = watch(path, { persistent: false }, () => this.changed());
        w.on("error", () => {
          w.close();
          this.watchers.delete(path);
        });
        this.watchers.set(path, w);
      } catch (error) {
        // a folder that does not exist yet is watched once it does (the next reconcile)
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") this.degraded = true;
      }
    }
  }

  get size(): number {
    return this.watchers.size;
  }

  private changed(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.fire();
    }, this.debounceMs);
  }

  private fire(): void {
    if (!this.closed) this.onChange();
  }

  close(): void {
    this.closed = true;
    clearInterval(this.poll);
    if (this.timer !== undefined) clearTimeout(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}
