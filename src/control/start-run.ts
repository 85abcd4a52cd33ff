/**
 * Starting a run as a process of its own, for the MCP server and the page:
 * everything a caller can get wrong is checked here first (the workdir, the
 * pipeline's path, the pipeline itself, the params), then an ordinary
 * `phaseloop run` starts detached with the run id chosen here, and the id
 * is handed back as soon as the run's folder exists. The process outlives
 * the caller; what it prints goes to .phaseloop/output/RUN_ID.log.
 *
 * There is no argument for the sandbox or the tools: a run started here has
 * exactly the fence its pipeline gives it. Params reach the run as
 * `--param k=v` do, through the same typing, templates and quoting.
 */
import { join } from "node:path";
import process from "node:process";
import { hasErrors, type Diagnostic } from "../diagnostics/diagnostic.ts";
import type { Host, HostClock, HostFiles } from "../host/host.ts";
import { nodeClock } from "../host/node-clock.ts";
import { nodeHost } from "../host/node-host.ts";
import { SourceMap, sortDiagnostics, toJsonDiagnostic, type JsonDiagnostic } from "../diagnostics/format-diagnostic.ts";
import { resolveParams } from "../machine/resolve-params.ts";
import { sourceTexts, type LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { isRunLive, readLock } from "../records/run-log.ts";
import { compileFile } from "../run/start-run.ts";
import type { StartedVia } from "../run/run-info.ts";
import { machineName } from "../runtime/run-lock.ts";
import { newRunId, runPath } from "../runtime/run-store.ts";
import { ControlError } from "./control-error.ts";
import { launchDetached, outputLogPath, type Launched } from "./launch.ts";
import { findRecipe } from "./recipes.ts";
import { CONTROL_FLAGS } from "./run-in-foreground.ts";
import { resolveInWorkdir, resolveWorkdir } from "./workdir-path.ts";

export type ParamValue = string | number | boolean;

export interface StartRunOptions {
  workdir: string;
  /** The pipeline: a path inside the workdir (relative to it) … */
  pipeline?: string;
  /** … or a recipe: one of phaseloop's, or PACKAGE/RECIPE of an installed package. */
  recipe?: string;
  /** As `--param k=v`: typed by the pipeline's params. */
  params?: Record<string, ParamValue>;
  /** As `--max-iterations N`. */
  maxIterations?: number;
  /** Recorded in run.json as `started_via`. */
  via: StartedVia;
  /** The run's environment (default: this process's). */
  env?: Record<string, string | undefined>;
  /** The program that starts phaseloop (default: this one; tests point it at the build). */
  command?: string[];
  /** How long to wait for the run's folder to appear (default 60 s). */
  startTimeoutMs?: number;
  /** Files and the clock: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export interface StartedRun {
  runId: string;
  /** The process running it (the leader of its own process group). */
  pid: number;
  /** The pipeline file it runs. */
  pipeline: string;
  workdir: string;
  /** Where the run's process writes what it prints. */
  output: string;
}

export async function startRun(o: StartRunOptions): Promise<StartedRun> {
  const host = o.host ?? nodeHost;
  const workdir = resolveWorkdir(o.workdir, undefined, host.files);
  if ((o.pipeline === undefined) === (o.recipe === undefined)) throw new ControlError("BAD_ARGUMENT", "give a pipeline (a path in the workdir) or a recipe, one of them");
  const file = o.pipeline !== undefined ? resolveInWorkdir(workdir, o.pipeline, "pipeline", host.files) : await findRecipe(o.recipe!, workdir, host);
  const params = paramArgs(o.params ?? {});
  if (o.maxIterations !== undefined && (!Number.isInteger(o.maxIterations) || o.maxIterations < 1)) throw new ControlError("BAD_ARGUMENT", `max_iterations must be a whole number of at least 1, got ${String(o.maxIterations)}`);

  // what the run would refuse, refused here with its diagnostics
  const compiled = await compileFile(file, host);
  if (!compiled.machine) throw invalidPipeline(file, compiled.diagnostics, compiled.loaded);
  const resolved = resolveParams(compiled.machine, Object.fromEntries(params.map((p) => [p.name, p.text])));
  if (resolved.diagnostics.length) throw invalidPipeline(file, resolved.diagnostics.map((d) => ({ ...d, file: compiled.loaded.file })), compiled.loaded);
  await refuseBusy(workdir, undefined, host);

  const runId = newRunId(new Date(host.clock.now()), Math.random);
  const args = ["run", file, "--workdir", workdir, CONTROL_FLAGS.runId, runId, CONTROL_FLAGS.startedVia, o.via, "--reporter", "plain", ...params.map((p) => `--param=${p.name}=${p.text}`)];
  if (o.maxIterations !== undefined) args.push("--max-iterations", String(o.maxIterations));
  const launched = launchDetached({ args, workdir, runId, env: o.env ?? process.env, host, ...(o.command ? { command: o.command } : {}) });
  await untilStarted(launched, () => host.files.exists(join(runPath(workdir, runId), "run.json")), o.startTimeoutMs ?? 60_000, `run ${runId}`, host.clock).catch(busyInstead);
  return { runId, pid: launched.pid, pipeline: file, workdir, output: outputLogPath(workdir, runId) };
}

/** Params as `--param` texts; names and values of any other shape are refused. */
function paramArgs(params: Record<string, ParamValue>): { name: string; text: string }[] {
  if (params === null || typeof params !== "object" || Array.isArray(params)) throw new ControlError("BAD_ARGUMENT", "params must be an object of names and values");
  return Object.entries(params).map(([name, value]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name)) throw new ControlError("BAD_ARGUMENT", `the param name "${name}" is not a name (letters, digits, _ and -)`);
    if (typeof value !== "string" && typeof value !== "boolean" && !(typeof value === "number" && Number.isFinite(value))) {
      throw new ControlError("BAD_ARGUMENT", `the param "${name}" must be a string, a number or true/false, got ${value === null ? "null" : Array.isArray(value) ? "a list" : typeof value}`);
    }
    if (typeof value === "string" && value.includes("\0")) throw new ControlError("BAD_ARGUMENT", `the param "${name}" holds a NUL character`);
    return { name, text: String(value) };
  });
}

/** The diagnostics of a pipeline as records (the form of `validate --json`). */
export function jsonDiagnostics(diagnostics: Diagnostic[], loaded?: LoadedPipeline): JsonDiagnostic[] {
  const texts = loaded ? sourceTexts(loaded) : {};
  const sources = new SourceMap(Object.fromEntries(Object.entries(texts).filter((e): e is [string, string] => e[1] !== undefined)));
  return sortDiagnostics(diagnostics).map((d) => toJsonDiagnostic(d, sources));
}

function invalidPipeline(file: string, diagnostics: Diagnostic[], loaded?: LoadedPipeline): ControlError {
  const records = jsonDiagnostics(diagnostics, loaded);
  const errors = records.filter((d) => d.severity === "error");
  const first = errors[0];
  const message = `the pipeline ${file} is invalid: ${errors.length} error${errors.length === 1 ? "" : "s"}${first ? `, the first: ${first.code} ${first.message}` : ""}`;
  return new ControlError("PIPELINE_INVALID", hasErrors(diagnostics) ? message : `the pipeline ${file} cannot be run`, { diagnostics: records });
}

/** A workdir another live run holds is refused before anything starts. */
export async function refuseBusy(workdir: string, exceptRun: string | undefined, host: Pick<Host, "files" | "processes">): Promise<void> {
  const lock = await readLock(workdir, host.files);
  if (lock === null || lock.run === null || lock.run === exceptRun) return;
  if (await isRunLive(workdir, lock.run, machineName(), host)) {
    throw new ControlError("WORKDIR_BUSY", `the workdir is in use by run ${lock.run}${lock.pid === null ? "" : ` (pid ${lock.pid})`}`, { hint: `wait for it (wait_for_run), or stop it first (stop_run ${lock.run})` });
  }
}

/**
 * Waits until `ready()` says the run is under way, or the process ends
 * first (then what it printed says why, unless it finished its work), or the
 * time passes.
 */
export async function untilStarted(launched: Launched, ready: () => boolean | Promise<boolean>, timeoutMs: number, what: string, clock: HostClock = nodeClock): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  let pause = 10;
  for (;;) {
    if (await ready()) return;
    if (launched.exitCode !== undefined) {
      if (await ready()) return;
      const output = launched.output().trim();
      throw new ControlError("START_FAILED", `${what} did not start (exit ${launched.exitCode ?? "?"})${output ? `: ${firstLines(output)}` : ""}`, { output });
    }
    if (clock.now() > deadline) throw new ControlError("START_FAILED", `${what} did not start within ${Math.round(timeoutMs / 1000)} s; its process (pid ${launched.pid}) is left running`, { output: launched.output() });
    await Promise.race([launched.exited, clock.sleep(pause)]);
    pause = Math.min(pause * 2, 100);
  }
}

/** A start that lost the workdir's lock to another one begun at the same moment says so by its code. */
export function busyInstead(error: unknown): never {
  if (error instanceof ControlError && error.code === "START_FAILED") {
    const held = /the workdir is in use by run (\S+)[^\n]*/.exec(error.output ?? "");
    if (held) throw new ControlError("WORKDIR_BUSY", held[0].replace(/; wait for it, or stop it first$/, ""), { hint: `wait for it (wait_for_run), or stop it first (stop_run ${held[1]})` });
  }
  throw error;
}

function firstLines(text: string): string {
  const lines = text.split("\n");
  return lines.length <= 20 ? text : `${lines.slice(0, 20).join("\n")}\n…`;
}
