/**
 * What the memory host adds beyond plain reads and writes: a file read at an
 * offset, a watch, a copy, the descriptors phaseloop prints to, and programs
 * started to outlive it. Built on the memory host's own files, so each write
 * is counted (and can be the crash) as any other.
 */
import { join } from "node:path";
import { fsError, type Detached, type DetachSpec, type FileInfo, type HostFiles, type ReadHandle, type Watcher } from "./host.ts";

/** A file opened for reading: each read sees the file as it is then, as a descriptor does. */
export async function openReadIn(files: HostFiles, path: string, options: { noFollow?: boolean } = {}): Promise<ReadHandle> {
  const link = files.lstat(path);
  if (options.noFollow && link?.isSymbolicLink()) throw fsError("ELOOP", "open", path);
  const info = files.stat(path);
  if (!info) throw fsError("ENOENT", "open", path);
  const bytes = (): Uint8Array => (info.isDirectory() ? new Uint8Array() : files.readBytes(path));
  return {
    async read(buffer, offset, length, position) {
      const data = bytes();
      const got = data.subarray(position, Math.min(data.length, position + length));
      buffer.set(got, offset);
      return got.length;
    },
    stat: async (): Promise<FileInfo> => files.stat(path) ?? info,
    close: async () => undefined,
  };
}

/** Copy a file or a folder with what it holds (modes kept), over what is there. */
export function copyIn(files: HostFiles, symlink: (target: string, path: string) => void, from: string, to: string): void {
  const info = files.lstat(from);
  if (!info) throw fsError("ENOENT", "cp", from);
  if (info.isSymbolicLink()) {
    files.remove(to, { force: true });
    symlink(files.readlink(from), to);
  } else if (info.isDirectory()) {
    files.mkdir(to, { mode: info.mode });
    for (const name of files.readdir(from)) copyIn(files, symlink, join(from, name), join(to, name));
  } else files.writeText(to, files.readText(from), { mode: info.mode });
}

/** Watches in memory: every write phaseloop makes wakes each of them (a hint to look again, as fs.watch gives). */
export class MemoryWatches {
  private readonly watchers = new Set<() => void>();
  private pending = false;

  watch(files: HostFiles, path: string, onChange: () => void): Watcher {
    if (!files.exists(path)) throw fsError("ENOENT", "watch", path);
    const w = () => onChange();
    this.watchers.add(w);
    return { close: () => void this.watchers.delete(w) };
  }

  /** A write happened: the watchers hear of it once the current work is done. */
  changed(): void {
    if (this.pending || this.watchers.size === 0) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      for (const w of [...this.watchers]) w();
    });
  }
}

/** What a memory host's program started to outlive phaseloop does: its exit code, or null when it cannot be started; a promise that never settles runs on. */
export type DetachScript = (spec: DetachSpec) => number | null | Promise<number | null>;

/** Programs started to outlive phaseloop, kept in `started` for tests to look at. */
export function detachIn(started: DetachSpec[], script: DetachScript | undefined, spec: DetachSpec): Detached {
  started.push(spec);
  const exited = script ? Promise.resolve(script(spec)) : new Promise<number | null>(() => undefined);
  return { pid: 20_000 + started.length, exited };
}
