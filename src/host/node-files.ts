/**
 * The real host's files: `node:fs`, synchronous, as the shell has always
 * written its run folders. Apart from node-host.ts so that the modules that
 * keep a run's files can default to it without importing the processes.
 */
import { appendFileSync, chmodSync, closeSync, constants, copyFileSync, cpSync, existsSync, fstatSync, fsyncSync, ftruncateSync, linkSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmdirSync, rmSync, statSync, symlinkSync, truncateSync, watch, writeFileSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import process from "node:process";
import { readSourceFile } from "./read-source-file.ts";
import type { FileHandle, HostFiles, OpenOptions } from "./host.ts";

function fdHandle(fd: number): FileHandle {
  let open = true;
  return {
    write: (data) => void writeSync(fd, data),
    truncate: (length = 0) => ftruncateSync(fd, length),
    sync: () => fsyncSync(fd),
    close: () => {
      if (!open) return;
      open = false;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
    },
  };
}

function openFd(path: string, flags: number, options: OpenOptions): number {
  const f = options.noFollow ? flags | constants.O_NOFOLLOW : flags;
  if (!options.replaceNonFile) return openSync(path, f);
  try {
    return openSync(path, f);
  } catch {
    rmSync(path, { recursive: true, force: true });
    return openSync(path, f);
  }
}

export const nodeFiles: HostFiles = {
  readText: (path) => readFileSync(path, "utf8"),
  readBytes: (path) => readFileSync(path),
  truncate: (path, length) => truncateSync(path, length),
  readSource: (path) => readSourceFile(path),
  writeText: (path, data, options = {}) => writeFileSync(path, data, { flag: options.exclusive ? "wx" : "w", mode: options.mode }),
  writeAtomic(path, data, durable = false) {
    const tmp = `${path}.tmp-${process.pid}`;
    if (durable) {
      const fd = openSync(tmp, "w");
      try {
        writeSync(fd, data);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } else writeFileSync(tmp, data);
    renameSync(tmp, path);
  },
  appendText: (path, data) => appendFileSync(path, data),
  openAppend: (path, options = {}) => fdHandle(openFd(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, options)),
  openWrite: (path, options = {}) => fdHandle(openFd(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, options)),
  mkdir: (path, options = {}) => void mkdirSync(path, { recursive: !options.exclusive, mode: options.mode }),
  mkdtemp: (prefix) => mkdtempSync(prefix),
  stat: (path) => statSync(path, { throwIfNoEntry: false }),
  lstat: (path) => lstatSync(path, { throwIfNoEntry: false }),
  exists: (path) => existsSync(path),
  readdir: (path) => readdirSync(path),
  readlink: (path) => readlinkSync(path),
  realpath: (path) => realpathSync(path),
  rename: (from, to) => renameSync(from, to),
  remove(path, options = {}) {
    rmSync(path, { recursive: options.recursive ?? false, force: options.force ?? false });
  },
  removeDir: (path) => rmdirSync(path),
  link: (from, to) => linkSync(from, to),
  async openRead(path, options = {}) {
    const handle = await open(path, options.noFollow ? constants.O_RDONLY | constants.O_NOFOLLOW : constants.O_RDONLY);
    return {
      read: async (buffer, offset, length, position) => (await handle.read(buffer, offset, length, position)).bytesRead,
      stat: () => handle.stat(),
      close: () => handle.close(),
    };
  },
  watch(path, onChange, onError) {
    const watcher = watch(path, { persistent: false }, () => onChange());
    watcher.on("error", () => {
      watcher.close();
      onError?.();
    });
    return watcher;
  },
  copy: (from, to) => cpSync(from, to, { recursive: true, force: true }),
  writeDescriptor: (fd, data, offset) => writeSync(fd, data, offset),
  readdirTypes: (path) => readdirSync(path, { withFileTypes: true }),
  lstatExact: (path) => lstatSync(path, { bigint: true, throwIfNoEntry: false }),
  statExact: (path) => statSync(path, { bigint: true, throwIfNoEntry: false }),
  readlinkBytes: (path) => readlinkSync(path, { encoding: "buffer" }),
  writeBytes: (path, data, options = {}) => writeFileSync(path, data, { mode: options.mode }),
  symlink: (target, path) => symlinkSync(target, path),
  copyFile: (from, to) => copyFileSync(from, to),
  chmod: (path, mode) => chmodSync(path, mode),
  fstat: (fd) => fstatSync(fd),
  // inotify through fs.watch reports a folder's entries: Node on Linux only (see changes/tree-watch.ts)
  ...(process.platform === "linux" && !("Deno" in globalThis)
    ? {
        watchEntries(dir: string, onEvent: (name: string | null) => void, onError: () => void) {
          const w = watch(dir, { persistent: false }, (_kind, name) => onEvent(name === null || name === undefined ? null : String(name)));
          w.on("error", onError);
          return w;
        },
      }
    : {}),
};

