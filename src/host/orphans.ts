/**
 * Processes left from an earlier life of a run. Phases run in process groups
 * of their own, so a phaseloop killed with SIGKILL leaves its phase running;
 * a resumed run (or one taking over the lock) must stop it before it starts
 * the phase again, or two agents would work in one workdir. Every phase and
 * hook carries PHASELOOP_RUN_ID in its environment: on Linux, /proc finds
 * them by it. A process can shed its environment (`setsid env -i …`), so a
 * phase outside a sandbox's pid namespace also starts with a hard limit on
 * file locks (a limit the kernel no longer applies) of LEFTOVER_MARK: its
 * processes inherit it, and one without privileges can lower it but never
 * raise it again. At the phase's end, a process made since it started that
 * carries the mark is the phase's too, unless its marked tree hangs from a
 * phase still running, here or in another phaseloop (`belongsHere`).
 * Elsewhere there is nothing to read, and nothing is stopped.
 */
import { Buffer } from "node:buffer";
import { openSync, readdirSync, readFileSync, readSync } from "node:fs";
import process from "node:process";
import { isProcessAlive } from "./process-alive.ts";

/**
 * Where the kernel's pid counter stood before a phase started, so that the
 * phase's end reads only the processes made since: the last pid allocated
 * (the last field of /proc/loadavg, for this pid namespace) and the time.
 */
export interface PidMark {
  /** The last pid handed out before the phase: its first process's pid minus one. */
  lastPid: number;
  at: number;
}

/** The hard RLIMIT_LOCKS of a phase's processes: finite and at most this marks them (normal processes have none). */
export const LEFTOVER_MARK = 1346915408;

/** Whether a process carries the mark: a finite hard limit on file locks at most LEFTOVER_MARK. */
export function carriesMark(limits: string): boolean {
  const line = limits.split("\n").find((l) => l.startsWith("Max file locks"));
  const hard = line?.slice(26).trim().split(/\s+/)[1];
  return hard !== undefined && /^\d+$/.test(hard) && Number(hard) <= LEFTOVER_MARK;
}

/** The first processes of the phases running now: a marked process below one of them is that phase's, not a leftover. */
export const liveRoots = new Set<number>();

/** The parent of `pid` read from /proc (undefined when it is gone). */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

function marked(pid: number): boolean {
  try {
    return carriesMark(readFileSync(`/proc/${pid}/limits`, "latin1"));
  } catch {
    return false;
  }
}

/** `name` of the environment of `pid` (undefined when unreadable or unset). */
function environOf(pid: number, name: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").find((l) => l.startsWith(`${name}=`))?.slice(name.length + 1);
  } catch {
    return undefined;
  }
}

/**
 * Whether `top` is a phase another phaseloop process runs: its environment names its phase
 * folder, and the lock of that folder's workdir (`.phaseloop/lock`) names `parent`, the live
 * process that started it.
 */
function anotherRunsPhase(top: number, parent: number): boolean {
  const dir = environOf(top, "PHASELOOP_PHASE_DIR");
  const at = dir?.lastIndexOf("/.phaseloop/") ?? -1;
  if (dir === undefined || at < 0) return false;
  try {
    const lock = JSON.parse(readFileSync(`${dir.slice(0, at)}/.phaseloop/lock`, "utf8")) as { pid?: unknown };
    return lock.pid === parent;
  } catch {
    return false;
  }
}

/**
 * Whether a marked process is this phase's to end: not under a phase of this
 * phaseloop that still runs, nor under a phase another phaseloop runs. Its
 * parents are read from /proc, at most 64 up, to the first one without the
 * mark (a mark cannot be taken off, so that one is where the marked tree
 * began). A tree this phaseloop started (its parent is this process) is the
 * phase's unless it is under a phase still running (`liveRoots`). A tree whose
 * top names a phase folder in its environment, and whose unmarked parent is
 * the live process holding that workdir's run lock, is another run's phase
 * beside this one: its processes (an MCP server an agent CLI started with an
 * environment of its own) are that phase's. Any other marked process was left
 * by a phase (reparented to the first process or a subreaper) and made since
 * the mark: it is ended.
 */
function belongsHere(pid: number): boolean {
  let cur = pid;
  for (let i = 0; i < 64; i++) {
    if (liveRoots.has(cur)) return false;
    const parent = parentOf(cur);
    if (parent === undefined) return true;
    if (parent === process.pid || parent <= 1) return true;
    if (!marked(parent)) return !anotherRunsPhase(cur, parent);
    cur = parent;
  }
  return true;
}

let pidMax: number | undefined;
/** The counter's file, kept open: read again at offset 0, it tells the counter now (null: it cannot be opened here). */
let counterFd: number | null | undefined;
const counterText = Buffer.alloc(32);

/** The counter now: the pid namespace's own (ns_last_pid), or the last field of /proc/loadavg where that cannot be read. */
function readCounter(): number {
  if (counterFd === undefined) {
    try {
      counterFd = openSync("/proc/sys/kernel/ns_last_pid", "r");
    } catch {
      counterFd = null;
    }
  }
  if (counterFd === null) return Number(readFileSync("/proc/loadavg", "latin1").trim().split(" ").pop());
  const n = readSync(counterFd, counterText, 0, counterText.length, 0);
  return Number(counterText.toString("latin1", 0, n).trim());
}

/** Where the pid counter stands now (undefined where /proc cannot tell). */
export function markPids(): PidMark | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    pidMax ??= Number(readFileSync("/proc/sys/kernel/pid_max", "latin1").trim());
    const lastPid = readCounter();
    return Number.isInteger(lastPid) && lastPid >= 0 && pidMax > 0 ? { lastPid, at: Date.now() } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a pid may have been made since the mark. Pids are handed out in
 * turn, wrapping at pid_max, so the new ones lie between the mark and the
 * counter now. That holds while the counter cannot have gone all the way
 * round, which takes pid_max new processes: the window allows 100 per
 * millisecond, far above what a machine forks. Past it every pid is read.
 */
export function madeSince(mark: { lastPid: number; at: number } | undefined, now: { lastPid: number; at: number } | undefined, max: number | undefined): (pid: number) => boolean {
  if (mark === undefined || now === undefined || max === undefined) return () => true;
  if (now.at - mark.at >= max / 100) return () => true;
  const from = mark.lastPid;
  const to = now.lastPid;
  if (to === from) return () => false;
  return to > from ? (pid) => pid > from && pid <= to : (pid) => pid > from || pid <= to;
}

/** The pids made since the mark, listed when they are few enough to look at one by one rather than list /proc; else undefined. */
export function fewPidsSince(mark: { lastPid: number; at: number } | undefined, now: { lastPid: number; at: number } | undefined, max: number | undefined, few = 256): number[] | undefined {
  if (mark === undefined || now === undefined || max === undefined || now.at - mark.at >= max / 100) return undefined;
  const count = (now.lastPid - mark.lastPid + max) % max;
  if (count > few) return undefined;
  return Array.from({ length: count }, (_, i) => ((mark.lastPid + i) % max) + 1);
}

/**
 * The pids whose environment says they belong to this run (and, given
 * `phaseDir`, to that phase run; given `since`, made after that mark). Given
 * both, a process made since that carries the mark and no PHASELOOP_PHASE_DIR
 * of another phase is found too, whatever else its environment says.
 */
export function findRunProcesses(runId: string, phaseDir?: string, since?: PidMark): number[] {
  if (process.platform !== "linux") return [];
  const now = since && markPids();
  let names: (string | number)[] | undefined = fewPidsSince(since, now, pidMax);
  if (names === undefined) {
    try {
      names = readdirSync("/proc");
    } catch {
      return [];
    }
  }
  const candidate = madeSince(since, now, pidMax);
  const marker = `\0PHASELOOP_RUN_ID=${runId}\0`;
  const phaseMarker = phaseDir === undefined ? "" : `\0PHASELOOP_PHASE_DIR=${phaseDir}\0`;
  const found: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid || !candidate(pid)) continue;
    try {
      const environ = `\0${readFileSync(`/proc/${pid}/environ`, "utf8")}\0`;
      if (environ.includes(marker) && environ.includes(phaseMarker)) found.push(pid);
      // what its environment says of another phase is not believed: where its marked tree began is
      else if (since && phaseDir !== undefined && carriesMark(readFileSync(`/proc/${pid}/limits`, "latin1")) && belongsHere(pid)) found.push(pid);
    } catch {
      // gone, never was, or another user's
    }
  }
  return found;
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // a phase leads its own group
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Stop the run's leftover processes: SIGTERM, then SIGKILL after `graceMs`. Returns the pids found. */
export async function stopRunProcesses(runId: string, graceMs = 2000): Promise<number[]> {
  const pids = findRunProcesses(runId);
  if (pids.length === 0) return [];
  for (const pid of pids) signalGroup(pid, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && pids.some(isProcessAlive)) await new Promise((r) => setTimeout(r, 50));
  for (const pid of pids) if (isProcessAlive(pid)) signalGroup(pid, "SIGKILL");
  return pids;
}

/**
 * End every process of a phase run at once (SIGKILL), wherever it went: the
 * ones that left the phase's process group (setsid, a daemonising tool) are
 * found by the run id and phase directory in their environment. Returns the
 * pids found. Given the mark taken before the phase started, only the
 * processes made since are read.
 */
export function killPhaseProcesses(runId: string, phaseDir: string, since?: PidMark): number[] {
  const pids = findRunProcesses(runId, phaseDir, since);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  return pids;
}
