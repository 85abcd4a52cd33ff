/**
 * The durable state of a run, under `<workdir>/.phaseloop/runs/RUN_ID/`:
 * run.json, state.json (replaced atomically; its journal state.journal), append-only events.jsonl and
 * iterations.jsonl, phases/NNNN-PHASE/ artifacts, summary.md.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointFile, readCheckpointFile } from "./checkpoint-file.ts";

export function phaseloopDir(workdir: string): string {
  return join(workdir, ".phaseloop");
}

/**
 * Create `.phaseloop/` (and `sub` inside it) with a `.gitignore` of `*`, so
 * that the folder keeps itself out of `git status` without phaseloop ever
 * writing into the user's own `.gitignore` or `.git/info/exclude`.
 */
export function makePhaseloopDir(workdir: string, ...sub: string[]): string {
  const dir = phaseloopDir(workdir);
  mkdirSync(join(dir, ...sub), { recursive: true });
  const ignore = join(dir, ".gitignore");
  if (!existsSync(ignore)) {
    try {
      writeFileSync(ignore, "*\n", { flag: "wx" });
    } catch {
      // written by someone else meanwhile, or not writable: the measurement excludes the folder anyway
    }
  }
  return join(dir, ...sub);
}

export function runPath(workdir: string, runId: string): string {
  return join(workdir, ".phaseloop", "runs", runId);
}

/** Run ids, oldest first: ids start with their time stamp, so they sort by name. */
export async function listRunIds(workdir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(join(workdir, ".phaseloop", "runs"), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isDirectory() && !e.name.startsWith("."))
    .map((e) => e.name)
    .sort();
}

/** Time-sortable run ids: 20261122-130512-k3f9. */
export function newRunId(now: Date, random: () => number): string {
  const p = (n: number, w = 2) => String(n).padStart(w, "0");
  const stamp = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}-${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  const suffix = Array.from({ length: 4 }, () => "abcdefghijkmnpqrstuvwxyz23456789"[Math.floor(random() * 32)]).join("");
  return `${stamp}-${suffix}`;
}

/**
 * Write a file so that readers see the old or the new content, never a torn
 * one: a temporary file in the same directory, then rename. `durable` adds
 * fsync (slower; protects against power loss, not just a killed process).
 */
export function writeFileAtomic(path: string, data: string, durable = false): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeTmp(tmp, data, durable);
  renameSync(tmp, path);
}

function writeTmp(tmp: string, data: string, durable: boolean): void {
  if (durable) {
    const fd = openSync(tmp, "w");
    try {
      writeSync(fd, data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } else writeFileSync(tmp, data);
}

/** An append-only JSON-lines file; each record is one write of one line. */
export class JsonlWriter {
  private fd: number;
  readonly path: string;
  constructor(path: string) {
    this.path = path;
    this.fd = openSync(path, "a");
  }
  append(record: unknown): void {
    writeSync(this.fd, JSON.stringify(record) + "\n");
  }
  appendMany(records: readonly unknown[]): void {
    if (records.length === 0) return;
    writeSync(this.fd, records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  }
  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
}

export class RunStore {
  readonly dir: string;
  readonly events: JsonlWriter;
  readonly iterations: JsonlWriter;
  readonly state: CheckpointFile;
  /** baseline.json, the open iteration's change baseline, replaced as the checkpoint is. */
  readonly baseline: CheckpointFile;
  readonly workdir: string;
  readonly runId: string;
  /** `dir`: elsewhere than the run's own directory (a lane's, inside it). */
  constructor(workdir: string, runId: string, dir: string = runPath(workdir, runId)) {
    this.workdir = workdir;
    this.runId = runId;
    this.dir = dir;
    mkdirSync(join(this.dir, "phases"), { recursive: true });
    this.events = new JsonlWriter(join(this.dir, "events.jsonl"));
    this.iterations = new JsonlWriter(join(this.dir, "iterations.jsonl"));
    this.state = new CheckpointFile(join(this.dir, "state.json"), { journal: true });
    this.baseline = new CheckpointFile(join(this.dir, "baseline.json"));
    this.state.recover();
    this.baseline.recover();
  }
  /** The iterations iterations.jsonl already records (a torn line, or none yet, records nothing). */
  recordedIterations(): Set<number> {
    const out = new Set<number>();
    let text: string;
    try {
      text = readFileSync(join(this.dir, "iterations.jsonl"), "utf8");
    } catch {
      return out;
    }
    for (const line of text.split("\n")) {
      try {
        const n = (JSON.parse(line) as { iteration?: unknown }).iteration;
        if (typeof n === "number") out.add(n);
      } catch {
        // a torn or empty line
      }
    }
    return out;
  }

  /**
   * A new run directory, whole from its first instant: its first files are
   * written into a hidden directory, which is then renamed into place. A
   * crash before the rename leaves no run (only `.new-RUN_ID`, which run
   * listings skip), never a run without its run.json or first checkpoint.
   */
  static create(workdir: string, runId: string, files: Record<string, string>): RunStore {
    const tmp = makePhaseloopDir(workdir, "runs", `.new-${runId}`);
    mkdirSync(join(tmp, "phases"), { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(tmp, name), text);
    renameSync(tmp, runPath(workdir, runId));
    return new RunStore(workdir, runId);
  }
  writeRunInfo(info: unknown): void {
    writeFileAtomic(join(this.dir, "run.json"), JSON.stringify(info, null, 2) + "\n");
  }
  readRunInfo<T>(): T | undefined {
    return readJson<T>(join(this.dir, "run.json"));
  }
  writeState(state: unknown): void {
    this.state.write(JSON.stringify(state));
  }
  /** The checkpoint given as its JSON text, recorded in the journal; state.json follows at `state.settle()`. */
  recordStateText(json: string): void {
    this.state.record(json);
  }
  readState<T>(): T | undefined {
    const text = readCheckpointFile(join(this.dir, "state.json"));
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as T;
    } catch {
      return undefined;
    }
  }
  /** phases/0007-review/ (created when something is written to it) */
  phaseDir(seq: number, phase: string): string {
    return join(this.dir, "phases", `${String(seq).padStart(4, "0")}-${phase}`);
  }
  writeSummary(markdown: string): void {
    writeFileAtomic(join(this.dir, "summary.md"), markdown);
  }
  /** The last complete event's seq (a torn last line from a crash is ignored). */
  lastEventSeq(): number {
    const path = join(this.dir, "events.jsonl");
    if (!existsSync(path)) return 0;
    const text = readFileSync(path, "utf8");
    const lines = text.split("\n");
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i]!.trim();
      if (!line) continue;
      try {
        const seq = (JSON.parse(line) as { seq?: number }).seq;
        if (typeof seq === "number") return seq;
      } catch {
        // a torn line: look further back
      }
    }
    return 0;
  }
  /** Make sure the file ends with a newline, so a torn line from a crash does not glue to the next record. */
  sealTornLines(): void {
    for (const name of ["events.jsonl", "iterations.jsonl"]) {
      const path = join(this.dir, name);
      if (!existsSync(path)) continue;
      const text = readFileSync(path, "utf8");
      if (text.length > 0 && !text.endsWith("\n")) appendFileSync(path, "\n");
    }
  }
  close(): void {
    this.state.close();
    this.baseline.close();
    this.events.close();
    this.iterations.close();
  }
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}
