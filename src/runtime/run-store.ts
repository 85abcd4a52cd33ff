/**
 * The durable state of a run, under `<workdir>/.phaseloop/runs/RUN_ID/`:
 * run.json, state.json (replaced atomically; its journal state.journal), append-only events.jsonl and
 * iterations.jsonl, phases/NNNN-PHASE/ artifacts, summary.md.
 */
import { join } from "node:path";
import type { FileHandle, HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
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
  return makePhaseloopDirOn(nodeFiles, workdir, ...sub);
}

/** `makePhaseloopDir` on the host's files. */
export function makePhaseloopDirOn(files: HostFiles, workdir: string, ...sub: string[]): string {
  const dir = phaseloopDir(workdir);
  files.mkdir(join(dir, ...sub));
  const ignore = join(dir, ".gitignore");
  if (!files.exists(ignore)) {
    try {
      files.writeText(ignore, "*\n", { exclusive: true });
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
export async function listRunIds(workdir: string, files: HostFiles = nodeFiles): Promise<string[]> {
  const runs = join(workdir, ".phaseloop", "runs");
  let names: string[];
  try {
    names = files.readdir(runs);
  } catch {
    return [];
  }
  return names
    .filter((name) => !name.startsWith(".") && files.lstat(join(runs, name))?.isDirectory() === true)
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
  nodeFiles.writeAtomic(path, data, durable);
}

/** An append-only JSON-lines file; each record is one write of one line. */
export class JsonlWriter {
  private fd: FileHandle;
  readonly path: string;
  constructor(path: string, files: HostFiles = nodeFiles) {
    this.path = path;
    this.fd = files.openAppend(path);
  }
  append(record: unknown): void {
    this.fd.write(JSON.stringify(record) + "\n");
  }
  appendMany(records: readonly unknown[]): void {
    if (records.length === 0) return;
    this.fd.write(records.map((r) => JSON.stringify(r)).join("\n") + "\n");
  }
  close(): void {
    this.fd.close();
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
  /** The host's files the run is kept on. */
  readonly files: HostFiles;
  /** `dir`: elsewhere than the run's own directory (a lane's, inside it). */
  constructor(workdir: string, runId: string, dir: string = runPath(workdir, runId), files: HostFiles = nodeFiles) {
    this.workdir = workdir;
    this.runId = runId;
    this.dir = dir;
    this.files = files;
    files.mkdir(join(this.dir, "phases"));
    this.events = new JsonlWriter(join(this.dir, "events.jsonl"), files);
    this.iterations = new JsonlWriter(join(this.dir, "iterations.jsonl"), files);
    this.state = new CheckpointFile(join(this.dir, "state.json"), { journal: true, files });
    this.baseline = new CheckpointFile(join(this.dir, "baseline.json"), { files });
    this.state.recover();
    this.baseline.recover();
  }
  /** The iterations iterations.jsonl already records (a torn line, or none yet, records nothing). */
  recordedIterations(): Set<number> {
    const out = new Set<number>();
    let text: string;
    try {
      text = this.files.readText(join(this.dir, "iterations.jsonl"));
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
  static create(workdir: string, runId: string, contents: Record<string, string>, files: HostFiles = nodeFiles): RunStore {
    const tmp = makePhaseloopDirOn(files, workdir, "runs", `.new-${runId}`);
    files.mkdir(join(tmp, "phases"));
    for (const [name, text] of Object.entries(contents)) files.writeText(join(tmp, name), text);
    files.rename(tmp, runPath(workdir, runId));
    return new RunStore(workdir, runId, undefined, files);
  }
  writeRunInfo(info: unknown): void {
    this.files.writeAtomic(join(this.dir, "run.json"), JSON.stringify(info, null, 2) + "\n");
  }
  readRunInfo<T>(): T | undefined {
    try {
      return JSON.parse(this.files.readText(join(this.dir, "run.json"))) as T;
    } catch {
      return undefined;
    }
  }
  writeState(state: unknown): void {
    this.state.write(JSON.stringify(state));
  }
  /** The checkpoint given as its JSON text, recorded in the journal; state.json follows at `state.settle()`. */
  recordStateText(json: string): void {
    this.state.record(json);
  }
  readState<T>(): T | undefined {
    const text = readCheckpointFile(join(this.dir, "state.json"), this.files);
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
    this.files.writeAtomic(join(this.dir, "summary.md"), markdown);
  }
  /** The last complete event's seq (a torn last line from a crash is ignored). */
  lastEventSeq(): number {
    const path = join(this.dir, "events.jsonl");
    if (!this.files.exists(path)) return 0;
    const text = this.files.readText(path);
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
      if (!this.files.exists(path)) continue;
      const text = this.files.readText(path);
      if (text.length > 0 && !text.endsWith("\n")) this.files.appendText(path, "\n");
    }
  }
  close(): void {
    this.state.close();
    this.baseline.close();
    this.events.close();
    this.iterations.close();
  }
}

