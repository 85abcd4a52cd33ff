/** What the contract suites share: finding a run's processes, reading a pid file, a run's events. */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { runDir } from "../cli/cli-helpers.ts";

/** Processes whose environment carries the run's id. */
export function processesOf(runId: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, "utf8").includes(`PHASELOOP_RUN_ID=${runId}\0`)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

/** Whether the process whose pid a file in `dir` holds still runs (a zombie does not). */
export function pidAlive(dir: string, file: string): boolean {
  const pid = Number(readFileSync(join(dir, file), "utf8").trim());
  if (!(pid > 1)) throw new Error(`${file} holds no pid`);
  return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
}

/** The run's phase.finished event and its id. */
export function finishedPhase(dir: string): { finished: Record<string, unknown>; runId: string } {
  const rd = runDir(dir);
  const events = readFileSync(join(rd, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const finished = events.find((e) => e.type === "phase.finished") ?? {};
  const runId = (JSON.parse(readFileSync(join(rd, "run.json"), "utf8")) as { run_id: string }).run_id;
  return { finished, runId };
}

/** Processes whose command line holds `marker` (for processes in another PID namespace, whose $$ means nothing here). */
export function processesRunning(marker: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ").includes(marker)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}
