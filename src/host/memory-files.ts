/**
 * The memory host's files: a file system of plain objects behind the HostFiles interface,
 * each change counted as a write (memory-host.ts: the crash injected at the N-th one).
 */
import { posix } from "node:path";
import process from "node:process";
import { fsError, type DirEntry, type ExactFileInfo, type FileHandle, type FileInfo, type HostFiles, type OpenOptions, type SourceRead } from "./host.ts";
import type { FakeClock } from "./fake-clock.ts";
import { copyIn, openReadIn, type MemoryWatches } from "./memory-extras.ts";

export type Node = { kind: "file"; data: string; mode: number; mtimeMs: number } | { kind: "dir"; mode: number; mtimeMs: number } | { kind: "link"; target: string; mode: number; mtimeMs: number };

/** What the files are kept in and counted by: the memory host's own state. */
export interface MemoryFsCore {
  nodes: Map<string, Node>;
  readonly clock: FakeClock;
  temp: number;
  readonly watches: MemoryWatches;
  printed: Record<number, string>;
  readonly files: HostFiles;
  abs(path: string): string;
  write(tear?: () => void): void;
  resolveLinks(path: string, follow: boolean, depth?: number): string;
  get(path: string, follow?: boolean): Node | undefined;
  parentDir(path: string, syscall: string): string;
  mkdirs(path: string, mode?: number): void;
  fileFor(path: string, options: OpenOptions, truncate: boolean): Node & { kind: "file" };
  handle(node: Node & { kind: "file" }): FileHandle;
  symlink(target: string, path: string): void;
}

export function norm(path: string): string {
  const p = posix.resolve("/", path);
  return p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p;
}

const inodes = new WeakMap<Node, number>();
let lastInode = 0;

function info(node: Node): FileInfo {
  if (!inodes.has(node)) inodes.set(node, ++lastInode);
  return {
    isFile: () => node.kind === "file",
    isDirectory: () => node.kind === "dir",
    isSymbolicLink: () => node.kind === "link",
    isFIFO: () => false,
    isSocket: () => false,
    size: node.kind === "file" ? new TextEncoder().encode(node.data).length : 0,
    // the type's bits too, as a stat's mode has them
    mode: TYPE_BITS[node.kind] | node.mode,
    mtimeMs: node.mtimeMs,
    ctimeMs: node.mtimeMs,
    ino: inodeOf(node),
    dev: 1,
    nlink: 1,
    uid: typeof process.getuid === "function" ? process.getuid() : 0,
  };
}

/** A node's inode number: one per node, never reused in the process (caches keyed by path and stat cannot mix two hosts' files). */
function inodeOf(node: Node): number {
  let ino = inodes.get(node);
  if (ino === undefined) inodes.set(node, (ino = ++lastInode));
  return ino;
}

const TYPE_BITS = { file: 0o100000, dir: 0o040000, link: 0o120000 } as const;

function exactInfo(node: Node): ExactFileInfo {
  const ns = BigInt(Math.round(node.mtimeMs * 1e6));
  return {
    mode: BigInt(TYPE_BITS[node.kind] | (node.mode & 0o7777)),
    size: BigInt(node.kind === "file" ? new TextEncoder().encode(node.data).length : 0),
    mtimeNs: ns,
    ctimeNs: ns,
    ino: BigInt(inodeOf(node)),
    isDirectory: () => node.kind === "dir",
  };
}

/** The files of a memory host. */
export function memoryFiles(self: MemoryFsCore): HostFiles {
  return {
    readText(path) {
      const node = self.get(path);
      if (!node) throw fsError("ENOENT", "open", path);
      if (node.kind !== "file") throw fsError("EISDIR", "read", path);
      return node.data;
    },
    readBytes(path) {
      return new TextEncoder().encode(this.readText(path));
    },
    truncate(path, length) {
      const node = self.get(path);
      if (!node) throw fsError("ENOENT", "open", path);
      if (node.kind !== "file") throw fsError("EISDIR", "open", path);
      self.write();
      const bytes = new TextEncoder().encode(node.data);
      node.data = new TextDecoder().decode(bytes.subarray(0, length));
    },
    readSource(path): SourceRead {
      const node = self.get(path);
      if (!node) return undefined;
      if (node.kind === "dir") return { problem: `"${path}" is a directory, not a file` };
      return node.kind === "file" ? node.data : undefined;
    },
    writeText(path, data, options = {}) {
      const p = self.parentDir(path, "open");
      if (options.exclusive && self.nodes.has(p)) throw fsError("EEXIST", "open", path);
      if (self.get(path)?.kind === "dir") throw fsError("EISDIR", "open", path);
      self.write();
      const target = self.nodes.get(p)?.kind === "link" ? self.resolveLinks(p, true) : p;
      self.nodes.set(target, { kind: "file", data, mode: options.mode ?? 0o644, mtimeMs: self.clock.now() });
    },
    writeAtomic(path, data) {
      const p = self.parentDir(path, "open");
      self.write();
      self.nodes.set(p, { kind: "file", data, mode: 0o644, mtimeMs: self.clock.now() });
    },
    appendText(path, data) {
      const node = self.fileFor(path, {}, false);
      self.write(() => (node.data += data.slice(0, Math.floor(data.length / 2))));
      node.data += data;
    },
    openAppend(path, options = {}) {
      const existed = self.get(path, !options.noFollow)?.kind === "file";
      if (!existed) self.write();
      return self.handle(self.fileFor(path, options, false));
    },
    openWrite(path, options = {}) {
      self.write();
      return self.handle(self.fileFor(path, options, true));
    },
    mkdir(path, options = {}) {
      if (options.exclusive) {
        const at = self.parentDir(path, "mkdir");
        if (self.nodes.has(at)) throw fsError("EEXIST", "mkdir", path);
        self.write();
        self.nodes.set(at, { kind: "dir", mode: options.mode ?? 0o755, mtimeMs: self.clock.now() });
        return;
      }
      if (self.get(path)?.kind === "dir") return;
      self.write();
      self.mkdirs(self.resolveLinks(path, true), options.mode);
    },
    mkdtemp(prefix) {
      const path = self.abs(`${prefix}${(++self.temp).toString(36).padStart(6, "0")}`);
      self.parentDir(path, "mkdtemp");
      self.write();
      self.mkdirs(path, 0o700);
      return path;
    },
    stat: (path) => {
      const node = self.get(path);
      return node && info(node);
    },
    lstat: (path) => {
      const node = self.get(path, false);
      return node && info(node);
    },
    exists: (path) => self.get(path) !== undefined,
    readdir(path) {
      const node = self.get(path);
      if (!node) throw fsError("ENOENT", "scandir", path);
      if (node.kind !== "dir") throw fsError("ENOTDIR", "scandir", path);
      const dir = self.resolveLinks(path, true);
      const prefix = dir === "/" ? "/" : `${dir}/`;
      return [...self.nodes.keys()].filter((k) => k !== dir && k.startsWith(prefix) && !k.slice(prefix.length).includes("/")).map((k) => k.slice(prefix.length));
    },
    readlink(path) {
      const node = self.get(path, false);
      if (!node) throw fsError("ENOENT", "readlink", path);
      if (node.kind !== "link") throw fsError("EINVAL", "readlink", path);
      return node.target;
    },
    realpath(path) {
      const real = self.resolveLinks(path, true);
      if (!self.nodes.has(real)) throw fsError("ENOENT", "realpath", path);
      return real;
    },
    rename(from, to) {
      const a = self.resolveLinks(from, false);
      if (!self.nodes.has(a)) throw fsError("ENOENT", "rename", from);
      const b = self.parentDir(to, "rename");
      const existing = self.nodes.get(b);
      if (existing?.kind === "dir" && [...self.nodes.keys()].some((k) => k.startsWith(`${b}/`))) throw fsError("ENOTEMPTY", "rename", to);
      self.write();
      const moved = [...self.nodes.entries()].filter(([k]) => k === a || k.startsWith(`${a}/`));
      for (const [k] of moved) self.nodes.delete(k);
      self.nodes.delete(b);
      for (const [k, v] of moved) self.nodes.set(b + k.slice(a.length), v);
    },
    remove(path, options = {}) {
      const p = self.resolveLinks(path, false);
      const node = self.nodes.get(p);
      if (!node) {
        if (options.force) return;
        throw fsError("ENOENT", "rm", path);
      }
      const inside = [...self.nodes.keys()].filter((k) => k.startsWith(`${p}/`));
      if (node.kind === "dir" && !options.recursive) throw fsError(inside.length ? "ENOTEMPTY" : "EISDIR", "rm", path);
      self.write();
      self.nodes.delete(p);
      for (const k of inside) self.nodes.delete(k);
    },
    removeDir(path) {
      const p = self.resolveLinks(path, false);
      const node = self.nodes.get(p);
      if (!node) throw fsError("ENOENT", "rmdir", path);
      if (node.kind !== "dir") throw fsError("ENOTDIR", "rmdir", path);
      if ([...self.nodes.keys()].some((k) => k.startsWith(`${p}/`))) throw fsError("ENOTEMPTY", "rmdir", path);
      self.write();
      self.nodes.delete(p);
    },
    link(from, to) {
      const a = self.resolveLinks(from, false);
      const node = self.nodes.get(a);
      if (!node) throw fsError("ENOENT", "link", from);
      if (node.kind === "dir") throw fsError("EPERM", "link", from);
      const b = self.parentDir(to, "link");
      if (self.nodes.has(b)) throw fsError("EEXIST", "link", to);
      self.write();
      self.nodes.set(b, node);
    },
    readdirTypes(path): DirEntry[] {
      const dir = self.resolveLinks(path, true);
      return this.readdir(path).map((name) => {
        const kind = self.nodes.get(`${dir === "/" ? "" : dir}/${name}`)?.kind;
        return { name, isFile: () => kind === "file", isDirectory: () => kind === "dir", isSymbolicLink: () => kind === "link" };
      });
    },
    lstatExact: (path) => {
      const node = self.get(path, false);
      return node && exactInfo(node);
    },
    statExact: (path) => {
      const node = self.get(path);
      return node && exactInfo(node);
    },
    readlinkBytes(path) {
      return new TextEncoder().encode(this.readlink(path));
    },
    writeBytes(path, data, options = {}) {
      this.writeText(path, new TextDecoder().decode(data), options);
    },
    symlink(target, path) {
      const p = self.parentDir(path, "symlink");
      if (self.nodes.has(p)) throw fsError("EEXIST", "symlink", path);
      self.write();
      self.nodes.set(p, { kind: "link", target, mode: 0o777, mtimeMs: self.clock.now() });
    },
    copyFile(from, to) {
      this.writeText(to, this.readText(from));
    },
    chmod(path, mode) {
      const node = self.get(path);
      if (!node) throw fsError("ENOENT", "chmod", path);
      self.write();
      node.mode = mode & 0o7777;
    },
    fstat(fd) {
      // phaseloop's own stdout and stderr lead nowhere in memory
      throw fsError("EBADF", "fstat", String(fd));
    },
    openRead: (path, options) => openReadIn(self.files, path, options),
    watch: (path, onChange) => self.watches.watch(self.files, path, onChange),
    copy: (from, to) => copyIn(self.files, (target, path) => self.symlink(target, path), from, to),
    writeDescriptor(fd, data, offset) {
      self.printed[fd] = (self.printed[fd] ?? "") + new TextDecoder().decode(data.subarray(offset));
      return data.length - offset;
    },
  };
}
