/**
 * The real host: the machine phaseloop runs on, under Node and Deno alike.
 * The only module of the shell that imports `node:fs` or reads the clock for
 * the run; the safe helpers (read-source-file, run-process, own-git) stay
 * the implementation behind it.
 */
import { appendFileSync, closeSync, constants, existsSync, fsyncSync, ftruncateSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import process from "node:process";
import { ownGitSync } from "../runtime/own-git.ts";
import { createPreflightHost, findProgram } from "../runtime/preflight-host.ts";
import { readSourceFile } from "../runtime/read-source-file.ts";
import { runProcess } from "../runtime/run-process.ts";
import type { FileHandle, Host, HostClock, HostFiles, OpenOptions } from "./host.ts";

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

const files: HostFiles = {
  readText: (path) => readFileSync(path, "utf8"),
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
  mkdir: (path, options = {}) => void mkdirSync(path, { recursive: true, mode: options.mode }),
  mkdtemp: (prefix) => mkdtempSync(prefix),
  stat: (path) => statSync(path, { throwIfNoEntry: false }),
  lstat: (path) => lstatSync(path, { throwIfNoEntry: false }),
  exists: (path) => existsSync(path),
  readdir: (path) => readdirSync(path),
  readlink: (path) => readlinkSync(path),
  rename: (from, to) => renameSync(from, to),
  remove(path, options = {}) {
    rmSync(path, { recursive: options.recursive ?? false, force: options.force ?? false });
  },
};

const clock: HostClock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolveSleep) => {
      if (signal?.aborted) return resolveSleep();
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        signal?.removeEventListener("abort", done);
        resolveSleep();
      }
      signal?.addEventListener("abort", done);
    }),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
  defer: (fn) => void setImmediate(fn),
};

/** The machine phaseloop runs on. */
export const nodeHost: Host = {
  files,
  processes: { run: runProcess },
  programs: {
    find: findProgram,
    version: (argv, cwd, env) => createPreflightHost(env).readVersion(argv, cwd),
  },
  git: {
    run(args, options) {
      const r = ownGitSync(args, { cwd: options.cwd, input: options.input, env: options.env });
      return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
    },
  },
  clock,
  get env() {
    return process.env;
  },
  cwd: () => process.cwd(),
  pid: process.pid,
};
