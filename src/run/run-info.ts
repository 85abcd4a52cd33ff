/** What run.json records about a run, and the hash that ties a run to its pipeline. */
import type { RunSandbox } from "./sandbox-preflight.ts";
import { createHash } from "node:crypto";
import { dirname, relative, resolve } from "node:path";
import type { JsonValue } from "../expr/index.ts";
import { VERSION } from "../generated/version.ts";
import type { Machine, PipelineSources } from "../machine/types.ts";

/** What run.json records. */
export interface RunInfo {
  run_id: string;
  pipeline: string;
  file: string;
  hash: string;
  version: string;
  params: Record<string, JsonValue>;
  workdir: string;
  started_at: string;
  agents: Record<string, string>;
  max_iterations: number;
  /** Every file the pipeline was read from: the pipeline, what it extends and includes, its prompts. */
  files?: RunFile[];
  /** The OS sandbox: asked, offered, and what each phase got. */
  sandbox?: RunSandbox;
  /** The model each agent phase runs with (phases whose agent names none are absent). */
  models?: Record<string, string>;
  /** The run's artifacts folder, relative to the workdir. */
  artifacts?: string;
  /** How changed files are measured: with git, by file snapshots outside git, or not at all (nothing in the pipeline reads them). */
  measure?: "git" | "files" | "off";
  /** `run --task`: the one task this run works (resume narrows the queue to it again). */
  task?: string;
  /** How the run was started: the command line, the MCP server or the page of `phaseloop ui` (absent in runs from before it was recorded). */
  started_via?: StartedVia;
}

/** Who started a run. */
export type StartedVia = "cli" | "mcp" | "ui";

export const STARTED_VIA: readonly StartedVia[] = ["cli", "mcp", "ui"];

/** One file a run's pipeline was read from. */
export interface RunFile {
  /** Absolute path. */
  path: string;
  role: "pipeline" | "extends" | "include" | "prompt" | "sub-pipeline";
  sha256: string;
  /** The package the file came from, and its version, for a file named by package. */
  package?: string;
  version?: string;
}

/** The files a loaded pipeline was read from, each with its hash. */
export function runFiles(loaded: PipelineSources): RunFile[] {
  const sha = (text: string) => createHash("sha256").update(text).digest("hex");
  const out: RunFile[] = [];
  const sources = loaded.files ?? [{ path: loaded.file, text: loaded.text, role: "pipeline" as const }];
  for (const f of sources) {
    out.push({ path: resolve(f.path), role: f.role, sha256: sha(f.text), ...("package" in f && f.package ? { package: f.package.name, ...(f.package.version ? { version: f.package.version } : {}) } : {}) });
  }
  for (const [path, text] of Object.entries(loaded.promptFiles)) out.push({ path: resolve(path), role: "prompt", sha256: text === undefined ? "missing" : sha(text) });
  // a sub-pipeline's files are the run's too: a changed child is a changed pipeline
  const known = new Set(out.map((f) => f.path));
  for (const child of Object.values(loaded.children ?? {})) {
    for (const f of runFiles(child.loaded)) {
      if (known.has(f.path)) continue;
      known.add(f.path);
      out.push(f.role === "pipeline" ? { ...f, role: "sub-pipeline" } : f);
    }
  }
  return out;
}

/** The files besides the pipeline itself that its hash covers: what it extends or includes, and its sub-pipelines with their own files. */
export function hashedSources(loaded: PipelineSources): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [...(loaded.files ?? []).slice(1)];
  for (const child of Object.values(loaded.children ?? {})) {
    out.push({ path: child.file, text: child.loaded.text }, ...hashedSources(child.loaded));
    for (const [path, text] of Object.entries(child.loaded.promptFiles)) out.push({ path, text: text ?? "" });
  }
  return out;
}

/** Which of a run's files changed since, in words; undefined when none did (or the run recorded none). */
export function changedFiles(before: RunFile[] | undefined, now: RunFile[]): string[] | undefined {
  if (!before) return undefined;
  const out: string[] = [];
  const byPath = new Map(now.map((f) => [f.path, f]));
  for (const f of before) {
    const n = byPath.get(f.path);
    const pkg = f.package ? ` (${f.package}${f.version ? ` ${f.version}` : ""}${n?.version && n.version !== f.version ? ` → ${n.version}` : ""})` : "";
    if (!n) out.push(`${f.path}${pkg} is no longer used`);
    else if (n.sha256 !== f.sha256) out.push(`${f.path}${pkg} changed`);
  }
  const known = new Set(before.map((f) => f.path));
  for (const f of now) if (!known.has(f.path)) out.push(`${f.path} is now used too`);
  return out;
}

/** Hash of the pipeline, its prompt files and the files it extends or includes: resume refuses a changed pipeline. */
export function pipelineHash(file: string, text: string, promptFiles: Record<string, string | undefined>, others: readonly { path: string; text: string }[] = []): string {
  const h = createHash("sha256").update(text);
  // a base or include by its path relative to the pipeline, as prompts are
  for (const o of others) h.update(`\0extends\0${relative(dirname(resolve(file)), resolve(o.path))}\0${o.text}`);
  // prompt files by their path relative to the pipeline, however the pipeline was named
  const base = dirname(resolve(file));
  const entries = Object.entries(promptFiles).map(([k, v]) => [relative(base, resolve(k)), v ?? ""] as const);
  for (const [k, v] of entries.sort((a, b) => a[0].localeCompare(b[0]))) h.update(`\0${k}\0${v}`);
  return `sha256:${h.digest("hex")}`;
}

/**
 * A run's run.json, as a run (or a sub-pipeline's run inside it) starts:
 * the pipeline's name, file, hash and files, from the sources it was read from.
 */
export function newRunInfo(o: { runId: string; machine: Machine; sources: PipelineSources; file: string; params: Record<string, JsonValue>; workdir: string; maxIterations: number; startedAt: Date }, more: Partial<RunInfo> = {}): RunInfo {
  const { sources } = o;
  return {
    run_id: o.runId,
    pipeline: o.machine.name,
    file: o.file,
    hash: pipelineHash(sources.file, sources.text, sources.promptFiles, hashedSources(sources)),
    version: VERSION,
    params: o.params,
    workdir: o.workdir,
    started_at: o.startedAt.toISOString(),
    agents: {},
    max_iterations: o.maxIterations,
    files: runFiles(sources),
    ...more,
  };
}

/** The run.started event of a run, from its run.json. */
export function runStartedEvent(machine: Machine, info: RunInfo): Record<string, unknown> {
  return { type: "run.started", pipeline: machine.name, file: info.file, hash: info.hash, workdir: info.workdir, params: info.params, max_iterations: info.max_iterations, phases: machine.phases.map((p) => p.name), version: VERSION, ...(info.task !== undefined ? { task: info.task } : {}), ...(info.started_via !== undefined ? { started_via: info.started_via } : {}) };
}
