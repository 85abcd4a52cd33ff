/**
 * The files phaseloop's own output lands in, which no phase changed:
 * `phaseloop run … > run.out` or `2> err.log` (the file is phaseloop's own
 * stdout or stderr), and `phaseloop run … | tee run.log` (the file is open
 * for writing by a process that reads phaseloop's output pipe). Change
 * measurement leaves them out: they change because phaseloop reports, not
 * because an agent worked.
 *
 * Files are known by device and inode, asked for when a measure finds
 * changes (a `tee` may open its file after phaseloop has started). A
 * redirect is seen everywhere (fstat of fds 1 and 2); the readers of a pipe
 * are found on Linux, through /proc: the processes holding the pipe's read
 * end, and the regular files each holds open for writing. Elsewhere a file
 * behind a pipe is measured as any other. Deno lets a program read /proc
 * only with `--allow-all`; with the documented permissions (`--allow-run`
 * among them) the same tables are read by a small `sh` script instead.
 *
 * An agent must not hide its work this way. The readers are the processes
 * that held the pipe when the run started (`noteOwnOutput`, before any phase
 * runs), so a process a phase starts later never becomes one; and a file
 * with more than one link is never left out, so a hard link to the log made
 * inside the write scope is measured.
 */
import { join } from "node:path";
import type { Host } from "../host/host.ts";

/** `dev:ino` of a stat. */
function idOf(st: { dev: number; ino: number }): string {
  return `${st.dev}:${st.ino}`;
}

/** One open file of a process: its fd, what /proc links it to, its access mode (O_RDONLY 0, O_WRONLY 1, O_RDWR 2). */
interface OpenFile {
  pid: string;
  fd: string;
  link: string;
  mode: number | undefined;
}

/** The readers of each pipe phaseloop writes (`PID/FD`), found once, before any phase ran. */
const readersOf = new Map<number, Set<string>>();

/** Find the readers of phaseloop's output now: called when a run starts, before any phase runs. */
export function noteOwnOutput(host: Host): void {
  ownOutputFiles(host);
}

/** The files (`dev:ino`) phaseloop's own stdout and stderr land in, now. */
export function ownOutputFiles(host: Host): Set<string> {
  const files = new Set<string>();
  for (const fd of [1, 2]) {
    let st;
    try {
      st = host.files.fstat(fd);
    } catch {
      continue; // closed
    }
    if (st.isFile()) files.add(idOf(st));
    else if (st.isFIFO()) for (const id of filesBehindPipe(host, st.ino)) files.add(id);
  }
  return files;
}

/** Paths (relative to the workdir) that are not one of phaseloop's own output files; asks only when there are some. */
export function withoutOwnOutput(host: Host, workdir: string, paths: readonly string[]): string[] {
  if (paths.length === 0) return [...paths];
  const own = ownOutputFiles(host);
  if (own.size === 0) return [...paths];
  return paths.filter((p) => {
    try {
      const st = host.files.stat(join(workdir, p));
      return !(st && st.isFile() && st.nlink === 1 && own.has(idOf(st)));
    } catch {
      return true;
    }
  });
}

/** The regular files the readers of a pipe (by inode) hold open for writing (Linux; none elsewhere). */
function filesBehindPipe(host: Host, ino: number): string[] {
  const link = `pipe:[${ino}]`;
  let readers = readersOf.get(ino);
  if (!readers) {
    const self = String(host.pid);
    readers = new Set(openFiles(host, undefined, (l) => l === link).filter((f) => f.pid !== self && f.mode !== 1).map((f) => `${f.pid}/${f.fd}`));
    readersOf.set(ino, readers);
  }
  if (readers.size === 0) return [];
  const pids = [...new Set([...readers].map((r) => r.slice(0, r.indexOf("/"))))];
  const table = openFiles(host, pids, (l) => l === link || l.startsWith("/"));
  const out: string[] = [];
  // a reader that no longer reads the pipe (ended; its pid may be another process's now) is dropped
  for (const r of [...readers]) if (!table.some((f) => `${f.pid}/${f.fd}` === r && f.link === link)) readers.delete(r);
  const live = new Set([...readers].map((r) => r.slice(0, r.indexOf("/"))));
  for (const f of table) {
    if (!live.has(f.pid) || (f.mode !== 1 && f.mode !== 2) || !f.link.startsWith("/")) continue;
    try {
      const st = host.files.stat(f.link);
      if (st?.isFile()) out.push(idOf(st));
    } catch {
      // removed, or not ours to see
    }
  }
  return out;
}

/**
 * The open files of these processes (all when not given) whose link `keep`
 * accepts, from /proc, or through `sh` where /proc cannot be read directly.
 */
function openFiles(host: Host, pids: string[] | undefined, keep: (link: string) => boolean): OpenFile[] {
  const files = host.files;
  let list: string[];
  try {
    list = pids ?? files.readdir("/proc").filter((n) => /^\d+$/.test(n));
  } catch (error) {
    return denied(error) ? openFilesBySh(host, pids).filter((f) => keep(f.link)) : []; // no /proc here
  }
  const out: OpenFile[] = [];
  for (const pid of list) {
    let fds: string[];
    try {
      fds = files.readdir(`/proc/${pid}/fd`);
    } catch (error) {
      if (denied(error)) return openFilesBySh(host, pids).filter((f) => keep(f.link));
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      try {
        const link = files.readlink(`/proc/${pid}/fd/${fd}`);
        // the access mode only of what is kept: one more read per fd would double a full scan
        if (keep(link)) out.push({ pid, fd, link, mode: modeOf(files.readText(`/proc/${pid}/fdinfo/${fd}`)) });
      } catch {
        // closed meanwhile
      }
    }
  }
  return out;
}

/** Deno without --allow-all refuses /proc (NotCapable). */
function denied(error: unknown): boolean {
  return (error as { name?: string })?.name === "NotCapable" || /NotCapable|--allow-all/.test(String(error));
}

/** The access mode in an fdinfo text. */
function modeOf(fdinfo: string): number | undefined {
  const m = /^flags:\s*([0-7]+)/m.exec(fdinfo);
  return m ? Number.parseInt(m[1]!, 8) & 3 : undefined;
}

/**
 * The same table, read by `find` and `grep` under `sh` (two processes, not
 * one per fd): `PID/fd FD LINK` lines, `--`, then `PID/fdinfo/FD:flags:\tOCTAL`
 * lines. The pids are digits only.
 */
const FD_TABLE = `cd /proc || exit; F=; I=; for p in "$@"; do F="$F $p/fd"; I="$I $p/fdinfo/*"; done; find $F -mindepth 1 -maxdepth 1 -printf '%h %f %l\\n' 2>/dev/null; echo --; grep -H '^flags' $I 2>/dev/null`;

function openFilesBySh(host: Host, pids?: string[]): OpenFile[] {
  const only = pids?.filter((p) => /^\d+$/.test(p));
  if (only?.length === 0) return [];
  // every process: the pids are the names /proc lists
  const script = only ? FD_TABLE : `cd /proc && set -- [0-9]* && ${FD_TABLE}`;
  const r = host.processes.runSync(["sh", "-c", script, "sh", ...(only ?? [])], { maxBuffer: 64 * 1024 * 1024 });
  const [links = "", flags = ""] = new TextDecoder().decode(r.stdout).split("\n--\n");
  const modes = new Map<string, number>();
  for (const m of flags.matchAll(/^(\d+)\/fdinfo\/(\d+):flags:\s*([0-7]+)$/gm)) modes.set(`${m[1]}/${m[2]}`, Number.parseInt(m[3]!, 8) & 3);
  const out: OpenFile[] = [];
  for (const m of links.matchAll(/^(\d+)\/fd (\d+) (.*)$/gm)) out.push({ pid: m[1]!, fd: m[2]!, link: m[3]!, mode: modes.get(`${m[1]}/${m[2]}`) });
  return out;
}
