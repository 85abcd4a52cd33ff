/**
 * What the contract suites share: a temporary git workdir, running phaseloop in it (with the
 * sandbox mode PHASELOOP_CONTRACT_SANDBOX asks for), the run's phase.finished event, the
 * processes a run left, and the mocks a file closes at its end.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll } from "vitest";
import { cliAsync, ensureBuilt, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";

/** dist/ built before the file's tests; everything handed to the returned function closed after them. */
export function contractSuite(): <T extends { close(): Promise<void> }>(server: T) => T {
  const open: { close(): Promise<void> }[] = [];
  beforeAll(() => ensureBuilt(), 120_000);
  afterAll(async () => {
    for (const s of open) await s.close();
  });
  return (server) => {
    open.push(server);
    return server;
  };
}

/** PATH with an installed CLI's folder first. */
export function pathWith(bin: string | undefined): string {
  return `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`;
}

export interface Workdir {
  /** The temp dir: the workdir itself, or its parent when `beside` (a fake HOME sits next to it). */
  top: string;
  dir: string;
}

/** A temporary git repository holding `files` (a pipeline among them), committed unless `commit: false`. */
export function gitWorkdir(prefix: string, files: Record<string, string>, opts: { beside?: boolean; commit?: boolean } = {}): Workdir {
  const top = tempDir(prefix);
  const dir = opts.beside ? join(top, "work") : top;
  if (opts.beside) mkdirSync(dir);
  write(dir, files);
  git(dir, "init", "-q");
  if (opts.commit !== false) commitAll(dir);
  return { top, dir };
}

/** Everything in the workdir committed, as the state a run starts from. */
export function commitAll(dir: string): void {
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "start");
}

/** What a CLI suite's test varies in its one-phase pipeline. */
export interface PipelineSetup {
  /** The tool set `t` (a YAML flow mapping); none: the phase has no tool set. */
  tools?: string;
  /** More lines of the phase (indented four spaces). */
  phase?: string;
  /** The phase's outputs (indented six spaces); by default `status` from `STATUS: WORD`. */
  output?: string;
  files?: Record<string, string>;
}

/** The pipeline the CLI suites run: agent `name` (`spec`, a YAML flow mapping) in one phase, `work`, tried once. */
export function contractPipeline(name: string, spec: string, s: PipelineSetup & { sandbox?: string }): string {
  return `phaseloop: 1
name: contract
${s.sandbox ? `sandbox: ${s.sandbox}\n` : ""}agents:
  ${name}: ${spec}
${s.tools ? `tools:\n  t: ${s.tools}\n` : ""}phases:
  work:
    agent: ${name}
${s.tools ? "    tools: t\n" : ""}    prompt: "Do the task."
    retry: { max_attempts: 1 }
${s.phase ?? ""}    output:
${s.output ?? "      status: { match: 'STATUS: (\\w+)' }"}
    next:
      - stop: complete
stop: { max_iterations: 1 }
`;
}

/**
 * `--sandbox MODE` when PHASELOOP_CONTRACT_SANDBOX is set (off, auto, required): the suites then
 * run every pipeline that way, whatever the pipeline says. A test that is about one mode only
 * passes its own `--sandbox`, which comes last and wins.
 */
export function contractSandbox(): string[] {
  const mode = process.env.PHASELOOP_CONTRACT_SANDBOX;
  return mode ? ["--sandbox", mode] : [];
}

/** Whether the suites run with the OS sandbox forced on. */
export const fenced = process.env.PHASELOOP_CONTRACT_SANDBOX === "required";

export interface RunOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
  finished: Record<string, unknown>;
  /** Every event of the run, in order. */
  events: Record<string, unknown>[];
  runId: string;
  /** Processes of the run still alive once phaseloop ended. */
  leftovers: number[];
  ms: number;
}

/** `phaseloop run p.yaml --reporter plain` (and `extra` arguments) in `dir`, and what it left. */
export async function runPipeline(dir: string, env: Record<string, string>, extra: string[] = []): Promise<RunOutcome> {
  const started = Date.now();
  const r = await cliAsync(["run", "p.yaml", "--reporter", "plain", ...contractSandbox(), ...extra], dir, env).done;
  const ms = Date.now() - started;
  const { finished, runId, events } = finishedPhase(dir);
  return { ...r, finished, events, runId, leftovers: await leftoversOf(runId), ms };
}

/**
 * The run's processes still alive once phaseloop ended. A process phaseloop
 * killed as it ended may take a moment to be gone on a busy machine (the
 * signal is delivered when it is next scheduled): one still there two
 * seconds later is a leftover.
 */
async function leftoversOf(runId: string): Promise<number[]> {
  const deadline = Date.now() + 2000;
  let found = processesOf(runId);
  while (found.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    found = processesOf(runId);
  }
  return found;
}

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
function pidAlive(dir: string, file: string): boolean {
  const pid = Number(readFileSync(join(dir, file), "utf8").trim());
  if (!(pid > 1)) throw new Error(`${file} holds no pid`);
  return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
}

/**
 * Whether a process a phase left behind still runs: the one whose pid (its `$$`) the phase
 * wrote to `file` in the workdir, or any whose command line holds `marker`. Inside the OS
 * sandbox the phase has a PID namespace of its own, where `$$` names no process out here:
 * then only the marker tells.
 */
export function leftBehind(o: RunOutcome, dir: string, file: string, marker: string): boolean {
  const sandboxed = o.events.find((e) => e.type === "phase.started")?.sandbox === true;
  return processesRunning(marker).length > 0 || (!sandboxed && pidAlive(dir, file));
}

/** The run's phase.finished event, its id and all its events. */
export function finishedPhase(dir: string): { finished: Record<string, unknown>; runId: string; events: Record<string, unknown>[] } {
  const rd = runDir(dir);
  const events = readFileSync(join(rd, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const finished = events.find((e) => e.type === "phase.finished") ?? {};
  const runId = (JSON.parse(readFileSync(join(rd, "run.json"), "utf8")) as { run_id: string }).run_id;
  return { finished, runId, events };
}

/** The first phase's raw event stream. */
export function stdoutLog(dir: string): string {
  return readFileSync(join(runDir(dir), "phases/0001-work/stdout.log"), "utf8");
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
