/**
 * Crash points: run the CLI under strace, which kills it (SIGKILL) at the
 * K-th write, rename or unlink system call of any of its threads or children,
 * then resume, and read back what the run left on disk.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { CLI } from "./cli-helpers.ts";

/** The calls a kill is injected at (PHASELOOP_CRASH_SYSCALLS widens the set, e.g. to "all"). */
export const SYSCALLS = process.env.PHASELOOP_CRASH_SYSCALLS ?? "write,rename,renameat,renameat2,unlink,unlinkat";

/** strace's path, when it is installed and may trace here (ptrace can be forbidden in containers). */
export function findStrace(): string | undefined {
  for (const path of ["/usr/bin/strace", "/bin/strace", "/usr/local/bin/strace"]) {
    if (!existsSync(path)) continue;
    const r = spawnSync(path, ["-f", "-qq", "-o", "/dev/null", "-e", "trace=none", "true"], { encoding: "utf8" });
    if (r.status === 0) return path;
  }
  return undefined;
}

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", NO_COLOR: "1", CI: "true" };

function spawnRun(command: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: ENV, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The CLI, killed at the k-th traced system call (per thread or process and per call, as strace counts). */
export function runKilledAt(strace: string, k: number | undefined, args: string[], cwd: string): Promise<Ran> {
  if (k === undefined) return spawnRun(process.execPath, [CLI, ...args], cwd);
  return spawnRun(strace, ["-f", "-qq", "-o", "/dev/null", "-e", `trace=${SYSCALLS}`, "-e", `inject=${SYSCALLS}:signal=SIGKILL:when=${k}`, process.execPath, CLI, ...args], cwd);
}

/** The most calls of one traced system call by one thread or process in an uninterrupted run: the K worth trying. */
export async function countCrashPoints(strace: string, args: string[], cwd: string, traceFile: string): Promise<number> {
  const r = await spawnRun(strace, ["-f", "-qq", "-o", traceFile, "-e", `trace=${SYSCALLS}`, process.execPath, CLI, ...args], cwd);
  if (r.code !== 0 && r.code !== 3) throw new Error(`the calibration run failed (${r.code}): ${r.stderr}`);
  const counts = new Map<string, number>();
  for (const line of readFileSync(traceFile, "utf8").split("\n")) {
    const m = /^(\d+)\s+([a-z0-9_]+)\(/.exec(line);
    if (!m) continue;
    const key = `${m[1]} ${m[2]}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return Math.max(0, ...counts.values());
}

type Json = Record<string, unknown>;

export interface RunFiles {
  runId: string;
  events: Json[];
  iterations: Json[];
  /** Lines that are not JSON objects. */
  badLines: string[];
}

export function readRunFiles(workdir: string): RunFiles | undefined {
  const runs = join(workdir, ".phaseloop/runs");
  if (!existsSync(runs)) return undefined;
  const ids = readdirSync(runs)
    .filter((name) => !name.startsWith("."))
    .sort();
  if (ids.length === 0) return undefined;
  const runId = ids[ids.length - 1]!;
  const badLines: string[] = [];
  const read = (name: string): Json[] => {
    const path = join(runs, runId, name);
    if (!existsSync(path)) return [];
    const text = readFileSync(path, "utf8");
    if (text !== "" && !text.endsWith("\n")) badLines.push(`${name}: the last line has no newline`);
    return text
      .split("\n")
      .filter((l) => l !== "")
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Json];
        } catch {
          badLines.push(`${name}: ${l.slice(0, 80)}`);
          return [];
        }
      });
  };
  return { runId, events: read("events.jsonl"), iterations: read("iterations.jsonl"), badLines };
}

/**
 * What the log of a run that ended must hold, whatever crashed on the way:
 * one run.started, one run.finished (the last event), seq strictly
 * increasing, every phase run finished once, every iteration started, finished
 * and recorded once, no line that cannot be read.
 */
export function logViolations(files: RunFiles): string[] {
  const v: string[] = [...files.badLines];
  const { events, iterations } = files;
  const count = (type: string) => events.filter((e) => e.type === type).length;
  if (count("run.started") !== 1) v.push(`run.started ${count("run.started")} times`);
  if (count("run.finished") !== 1) v.push(`run.finished ${count("run.finished")} times`);
  else if (events[events.length - 1]?.type !== "run.finished") v.push(`run.finished is not the last event`);
  if (events[0]?.type !== "run.started") v.push(`the log starts with ${String(events[0]?.type)}`);
  for (let i = 1; i < events.length; i++) {
    if (!((events[i]!.seq as number) > (events[i - 1]!.seq as number))) v.push(`seq ${String(events[i]!.seq)} follows ${String(events[i - 1]!.seq)}`);
  }
  const once = (type: string, key: (e: Json) => string) => {
    const seen = new Set<string>();
    for (const e of events.filter((x) => x.type === type)) {
      const k = key(e);
      if (seen.has(k)) v.push(`${type} ${k} twice`);
      seen.add(k);
    }
    return seen;
  };
  const finished = once("phase.finished", (e) => `${String(e.iteration)}/${String(e.phase)}/${String(e.attempt)}`);
  once("iteration.started", (e) => String(e.iteration));
  const ended = once("iteration.finished", (e) => String(e.iteration));
  const recorded = new Set<string>();
  for (const r of iterations) {
    const k = String(r.iteration);
    if (recorded.has(k)) v.push(`iteration ${k} recorded twice in iterations.jsonl`);
    recorded.add(k);
    for (const [phase, p] of Object.entries((r.phases ?? {}) as Record<string, Json>)) {
      if (p.status === "skipped" || p.status === "pending") continue;
      const ran = [...finished].some((f) => f.startsWith(`${k}/${phase}/`));
      if (!ran) v.push(`phase ${phase} of iteration ${k} finished (iterations.jsonl) but has no phase.finished event`);
    }
  }
  for (const k of ended) if (!recorded.has(k)) v.push(`iteration ${k} finished but is not in iterations.jsonl`);
  for (const k of recorded) if (!ended.has(k)) v.push(`iteration ${k} is in iterations.jsonl but has no iteration.finished event`);
  const started = events.filter((e) => e.type === "phase.started").map((e) => `${String(e.iteration)}/${String(e.phase)}/${String(e.attempt)}`);
  for (const f of finished) if (!started.includes(f)) v.push(`phase ${f} finished without phase.started`);
  return v;
}
