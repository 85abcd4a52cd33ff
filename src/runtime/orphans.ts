/**
 * Processes left from an earlier life of a run. Phases run in process groups
 * of their own, so a phaseloop killed with SIGKILL leaves its phase running;
 * a resumed run (or one taking over the lock) must stop it before it starts
 * the phase again, or two agents would work in one workdir. Every phase and
 * hook carries PHASELOOP_RUN_ID in its environment: on Linux, /proc finds
 * them by it. Elsewhere there is nothing to read, and nothing is stopped.
 */
import { readdirSync, readFileSync } from "node:fs";
import process from "node:process";
import { isProcessAlive } from "./run-lock.ts";

/** The pids whose environment says they belong to this run (and, given `phaseDir`, to that phase run). */
export function findRunProcesses(runId: string, phaseDir?: string): number[] {
  if (process.platform !== "linux") return [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const marker = `\0PHASELOOP_RUN_ID=${runId}\0`;
  const phaseMarker = phaseDir === undefined ? "" : `\0PHASELOOP_PHASE_DIR=${phaseDir}\0`;
  const found: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const environ = `\0${readFileSync(`/proc/${name}/environ`, "utf8")}\0`;
      if (environ.includes(marker) && environ.includes(phaseMarker)) found.push(pid);
    } catch {
      // gone, or another user's
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
 * pids found.
 */
export function killPhaseProcesses(runId: string, phaseDir: string): number[] {
  const pids = findRunProcesses(runId, phaseDir);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  return pids;
}
