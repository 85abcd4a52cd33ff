/**
 * One run per workdir: `.phaseloop/lock` holds the pid, run id, host and start
 * time. A lock whose process is gone (a crash, kill -9) is taken over; a live
 * one refuses with a message naming the run.
 */
import { hostname } from "node:os";
import { join } from "node:path";
import type { Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { isProcessAlive } from "../host/process-alive.ts";
import { makePhaseloopDirOn } from "./run-store.ts";

export { isProcessAlive };

export interface LockInfo {
  pid: number;
  run_id: string;
  host: string;
  started_at: string;
}

export type LockResult = { ok: true; release: () => void; tookOver?: LockInfo } | { ok: false; holder?: LockInfo; message: string };

function readLockFile(host: Host, path: string): LockInfo | undefined {
  try {
    const info = JSON.parse(host.files.readText(path)) as LockInfo;
    const ok = info !== null && typeof info === "object" && Number.isInteger(info.pid) && typeof info.run_id === "string" && typeof info.host === "string" && typeof info.started_at === "string";
    return ok ? info : undefined;
  } catch {
    return undefined;
  }
}

/**
 * This machine's name, for the lock's host check. Deno asks for a `sys`
 * permission to read it; without one the name comes from /etc/hostname or
 * the environment, which on Linux is the same name.
 */
export function machineName(host: Host = nodeHost): string {
  try {
    return hostname();
  } catch {
    try {
      const name = host.files.readText("/etc/hostname").trim();
      if (name) return name;
    } catch {
      // no such file
    }
    return host.env.HOSTNAME || host.env.COMPUTERNAME || "localhost";
  }
}

/**
 * Why the lock cannot be taken whatever its holder: `.phaseloop` or its lock
 * is something other than a directory and a regular file. Such a thing is
 * reported, never renamed over.
 */
export function lockPathProblem(workdir: string, host: Host = nodeHost): string | undefined {
  const dir = join(workdir, ".phaseloop");
  const path = join(dir, "lock");
  for (const [p, want] of [
    [dir, "directory"],
    [path, "file"],
  ] as const) {
    let stat;
    try {
      stat = host.files.lstat(p);
    } catch (error) {
      return `${p}: error LOCK_INVALID cannot be read: ${(error as Error).message}`;
    }
    if (!stat) return undefined;
    const ok = want === "directory" ? stat.isDirectory() : stat.isFile();
    if (!ok) {
      const what = stat.isDirectory() ? "a directory" : stat.isSymbolicLink() ? "a symbolic link" : stat.isFile() ? "a file" : "a special file";
      return `${p}: error LOCK_INVALID is ${what}, not a ${want}\n  hint: phaseloop keeps ${want === "file" ? "its run lock in this file" : "its state in this directory"}; move it away (if no phaseloop run is using ${workdir}), then try again`;
    }
  }
  return undefined;
}

export function acquireLock(workdir: string, runId: string, now: Date, host: Host = nodeHost): LockResult {
  const problem = lockPathProblem(workdir, host);
  if (problem) return { ok: false, message: problem };
  try {
    return takeLock(host, workdir, runId, now);
  } catch (error) {
    // a file system that refuses (permissions, a full disk, a race with another tool): an input problem, not a crash
    return { ok: false, message: `${join(workdir, ".phaseloop", "lock")}: error LOCK_INVALID cannot take the lock: ${(error as Error).message}` };
  }
}

function takeLock(host: Host, workdir: string, runId: string, now: Date): LockResult {
  const { files, pid } = host;
  const dir = makePhaseloopDirOn(files, workdir);
  const path = join(dir, "lock");
  const info: LockInfo = { pid, run_id: runId, host: machineName(host), started_at: now.toISOString() };
  const tmp = `${path}.${pid}.${Math.random().toString(36).slice(2)}`;
  files.writeText(tmp, JSON.stringify(info) + "\n");
  const release = () => {
    const current = readLockFile(host, path);
    if (current && current.pid === pid && current.run_id === runId) files.remove(path, { force: true });
  };
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        files.link(tmp, path); // atomic create-if-absent, with the content already in place
        return { ok: true, release };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = readLockFile(host, path);
      const sameHost = !holder || holder.host === info.host;
      if (holder && sameHost && host.processes.alive(holder.pid) && holder.pid !== pid) {
        return {
          ok: false,
          holder,
          message: `the workdir is in use by run ${holder.run_id} (pid ${holder.pid}, started ${holder.started_at}); wait for it, or stop it first`,
        };
      }
      if (holder && !sameHost) {
        return { ok: false, holder, message: `the workdir is locked by run ${holder.run_id} on host ${holder.host} (pid ${holder.pid}); remove .phaseloop/lock if that run is gone` };
      }
      // a dead process's lock (or a garbled one): take it over, then check we won
      files.rename(tmp, path);
      const now2 = readLockFile(host, path);
      if (now2 && now2.pid === pid && now2.run_id === runId) return { ok: true, release, tookOver: holder };
      files.writeText(tmp, JSON.stringify(info) + "\n");
    }
    const holder = readLockFile(host, path) ?? info;
    return { ok: false, holder, message: `could not take the lock of ${path}` };
  } finally {
    files.remove(tmp, { force: true });
  }
}
