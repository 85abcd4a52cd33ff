/**
 * Tells the server when something under `.phaseloop/` may have changed:
 * fs.watch on the folders that can change (the runs folder, the lock's
 * folder, the folders of runs that have not finished, the running phase's
 * folder), each change passed on at most every `debounceMs`, and a slow poll
 * beside it for file systems where watching misses appends. Folders are
 * watched one by one, never a whole tree: a workdir of many finished runs
 * costs nothing.
 */
import type { Host, Watcher } from "../host/host.ts";

/** A timer that does not keep phaseloop alive by itself, where the clock's timers can say so. */
function unref(timer: unknown): unknown {
  (timer as { unref?: () => void } | undefined)?.unref?.();
  return timer;
}

export class RunsWatcher {
  private readonly watchers = new Map<string, Watcher>();
  private timer: unknown;
  private poll: unknown;
  private closed = false;
  /** Watching failed somewhere (no inotify left, say): the poll is all there is, so it runs faster. */
  degraded = false;

  private readonly onChange: () => void;
  private readonly debounceMs: number;
  private readonly host: Pick<Host, "files" | "clock">;

  constructor(onChange: () => void, host: Pick<Host, "files" | "clock">, debounceMs = 40, pollMs = 1000) {
    this.onChange = onChange;
    this.host = host;
    this.debounceMs = debounceMs;
    const every = (): void => {
      this.poll = unref(host.clock.setTimer(every, pollMs));
      this.fire();
    };
    this.poll = unref(host.clock.setTimer(every, pollMs));
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
        const w = this.host.files.watch(
          path,
          () => this.changed(),
          () => this.watchers.delete(path),
        );
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
    this.timer = this.host.clock.setTimer(() => {
      this.timer = undefined;
      this.fire();
    }, this.debounceMs);
  }

  private fire(): void {
    if (!this.closed) this.onChange();
  }

  close(): void {
    this.closed = true;
    this.host.clock.clearTimer(this.poll);
    if (this.timer !== undefined) this.host.clock.clearTimer(this.timer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }
}
