/**
 * The imperative shell around the machine: it feeds `transition` events and
 * carries out the effects it returns (processes, files, waits, hooks), writes
 * the checkpoint after every transition, and reports run events.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parserFor } from "../agents/command-agent.ts";
import type { AgentRunReport } from "../agents/agent-adapter.ts";
import { getAdapter } from "../agents/get-adapter.ts";
import { openAiBaseUrl, runOpenAiAgent, type OpenAiAgentResult } from "../agents/openai-agent.ts";
import { renderTemplate, parseTemplate, type Template } from "../expr/index.ts";
import { exitCodeFor, transition } from "../machine/transition.ts";
import type { CompiledPhase, Effect, Machine, MachineEvent, PhaseResult, Snapshot, TaskItem } from "../machine/types.ts";
import type { AgentSpec, ErrorClass, JsonValue, ToolSetSpec } from "../pipeline/spec.ts";
import { classifyProcess } from "../runtime/classify-failure.ts";
import { extractOutputs, type SchemaCheck } from "../runtime/extract-output.ts";
import { changesSince, revertPaths, takeBaseline, type Baseline } from "../runtime/measure-changes.ts";
import { runProcess, type ProcessResult } from "../runtime/run-process.ts";
import { resolveInside } from "../runtime/resolve-inside.ts";
import { RunStore, writeFileAtomic } from "../runtime/run-store.ts";
import { loadTasks, writeBackTask } from "./load-tasks.ts";
import type { Reporter, RunEvent, RunOutcome } from "./run-events.ts";
import { TRANSIENT_EVENT_TYPES } from "./run-events.ts";
import { formatSummary } from "./format-summary.ts";

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
}

/** What state.json holds: the machine snapshot and the bookkeeping of the log. */
export interface Checkpoint {
  snapshot: Snapshot;
  /** seq of the last event this checkpoint accounts for. */
  seq: number;
  /** Events of the last transition, re-appended on resume if a crash lost them. */
  pending: RunEvent[];
  updated_at: string;
}

export interface RunnerOptions {
  machine: Machine;
  store: RunStore;
  info: RunInfo;
  reporter: Reporter;
  env: Record<string, string | undefined>;
  /** Tasks read before the run started (answering the machine's tasks.load). */
  tasks?: TaskItem[];
  signal: AbortSignal;
}

export interface RunResult {
  exitCode: number;
  outcome: RunOutcome | "interrupted";
  snapshot: Snapshot;
}

/** Hash of the pipeline and its prompt files: resume refuses a changed pipeline. */
export function pipelineHash(file: string, text: string, promptFiles: Record<string, string | undefined>): string {
  const h = createHash("sha256").update(text);
  // prompt files by their path relative to the pipeline, however the pipeline was named
  const base = dirname(resolve(file));
  const entries = Object.entries(promptFiles).map(([k, v]) => [relative(base, resolve(k)), v ?? ""] as const);
  for (const [k, v] of entries.sort((a, b) => a[0].localeCompare(b[0]))) h.update(`\0${k}\0${v}`);
  return `sha256:${h.digest("hex")}`;
}

export { resolveInside } from "../runtime/resolve-inside.ts";

let ajvCheck: SchemaCheck | undefined;
async function schemaChecker(): Promise<SchemaCheck> {
  if (ajvCheck) return ajvCheck;
  const { Ajv } = await import("ajv");
  const ajv = new Ajv({ allErrors: true, strict: false });
  const cache = new Map<string, ReturnType<typeof ajv.compile>>();
  ajvCheck = (schema, value) => {
    const key = JSON.stringify(schema);
    let v = cache.get(key);
    if (!v) cache.set(key, (v = ajv.compile(schema)));
    return v(value) ? undefined : ajv.errorsText(v.errors, { dataVar: "value" });
  };
  return ajvCheck;
}

export class Runner {
  readonly o: RunnerOptions;
  snapshot: Snapshot;
  seq: number;
  private iterationBaseline: Baseline | undefined;
  private interrupted: string | undefined;
  /** The environment phases inherit, copied once: reading `process.env` key by key is slow. */
  private readonly env: Record<string, string | undefined>;

  /**
   * A process environment: the inherited one with `extra` on top. The
   * inherited variables are the prototype, not copies (child_process reads
   * inherited keys by design), so a phase does not copy the whole environment.
   */
  private envWith(...extra: (Record<string, string | undefined> | undefined)[]): Record<string, string | undefined> {
    const env = Object.create(this.env) as Record<string, string | undefined>;
    for (const e of extra) if (e) Object.assign(env, e);
    return env;
  }

  constructor(o: RunnerOptions, snapshot: Snapshot, seq: number) {
    this.o = o;
    this.env = { ...o.env };
    this.snapshot = snapshot;
    this.seq = seq;
    if (o.machine.measuresChanges && snapshot.iterationOpen) {
      const saved = readJson<{ iteration: number; baseline: Baseline }>(join(o.store.dir, "baseline.json"));
      if (saved?.iteration === snapshot.iteration) this.iterationBaseline = saved.baseline;
    }
    o.signal.addEventListener("abort", () => {
      this.interrupted ??= String(o.signal.reason ?? "SIGINT");
    });
  }

  private now(): number {
    return Date.now();
  }

  /** Emit a run event: logged (unless transient) and reported. */
  private emit(partial: Record<string, unknown> & { type: RunEvent["type"] }, log: RunEvent[]): void {
    const transient = TRANSIENT_EVENT_TYPES.has(partial.type);
    const event = { v: 1, seq: transient ? 0 : ++this.seq, at: new Date().toISOString(), run: this.o.info.run_id, ...partial } as RunEvent;
    if (!transient) log.push(event);
    this.reports.push(event);
    this.scheduleFlush();
  }

  /**
   * Write the checkpoint. Only the checkpoint must be on disk before the next
   * effect starts: it carries the transition's events as `pending`, so
   * appending them to events.jsonl and reporting them can wait until the next
   * phase is running (resume re-appends what a crash lost). The events of the
   * previous checkpoint are appended first, so none is ever only in memory.
   */
  private checkpoint(pending: RunEvent[]): void {
    this.flushEvents();
    const cp: Checkpoint = { snapshot: this.snapshot, seq: this.seq, pending, updated_at: new Date().toISOString() };
    this.o.store.writeState(cp);
    for (const e of pending) this.unlogged.push(e);
    this.scheduleFlush();
  }

  private readonly unlogged: RunEvent[] = [];
  private readonly reports: RunEvent[] = [];
  private flushScheduled = false;

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  private flushEvents(): void {
    if (this.unlogged.length === 0) return;
    this.o.store.events.appendMany(this.unlogged.splice(0));
  }

  /** Append the events not yet in the log, then report the events not yet reported. */
  flush(): void {
    this.flushScheduled = false;
    this.flushEvents();
    for (const event of this.reports.splice(0)) this.o.reporter.onEvent(event);
    if (this.snapshot.status !== "done") this.o.store.state.prepare();
  }

  /** The first checkpoint, before anything runs: a run killed at once can still be resumed. */
  initialCheckpoint(): void {
    this.checkpoint([]);
  }

  /** Drive the machine from `first` until it stops or is interrupted. */
  async run(first: MachineEvent, preface: Record<string, unknown>[] = []): Promise<RunResult> {
    let event: MachineEvent | undefined = first;
    const log: RunEvent[] = [];
    for (const p of preface) this.emit(p as never, log);
    while (event) {
      const { snapshot, effects } = transition(this.o.machine, this.snapshot, event);
      this.snapshot = snapshot;
      event = undefined;
      // events reported while carrying out effects are logged with the next checkpoint;
      // the ones the transition itself implies are logged now, with the checkpoint
      const now: RunEvent[] = log.splice(0);
      // run.finished is reported last, after the end hooks have run
      for (const e of effects) if (e.type !== "stop") this.logEffect(e, now);
      this.checkpoint(now);
      if (snapshot.status === "interrupted") break;
      for (const effect of effects) {
        const next = await this.perform(effect, log);
        if (next) event = next;
      }
      if (snapshot.status === "done") {
        for (const e of effects) if (e.type === "stop") this.logEffect(e, log);
        break;
      }
      if (this.interrupted) {
        event = { type: "interrupted", at: this.now(), signal: this.interrupted };
      }
    }
    const pendingLog = log.splice(0);
    const s = this.snapshot;
    if (s.status === "interrupted") {
      this.emit({ type: "run.interrupted", signal: this.interrupted ?? "SIGINT", iteration: s.iteration, phase: s.awaiting?.kind === "phase" || s.awaiting?.kind === "retry" ? s.awaiting.phase : null }, pendingLog);
      this.checkpoint(pendingLog);
      this.flush();
      this.writeSummary();
      return { exitCode: 130, outcome: "interrupted", snapshot: s };
    }
    if (pendingLog.length) this.checkpoint(pendingLog);
    this.flush();
    this.writeSummary();
    const outcome = (s.outcome?.outcome ?? "failed") as RunOutcome;
    return { exitCode: exitCodeFor(outcome), outcome, snapshot: s };
  }

  /** Run events implied by effects that need no work (logged with the checkpoint). */
  private logEffect(e: Effect, log: RunEvent[]): void {
    const s = this.snapshot;
    switch (e.type) {
      case "phase.skipped":
        this.emit({ type: "phase.skipped", iteration: e.iteration, phase: e.phase, reason: e.reason }, log);
        break;
      case "phase.error":
        this.emit({ type: "note", level: "warning", message: e.message }, log);
        break;
      case "note":
        this.emit({ type: "note", level: e.level, message: e.message }, log);
        break;
      case "iteration.begin":
        this.emit({ type: "iteration.started", iteration: e.iteration, task: e.task }, log);
        break;
      case "iteration.end":
        this.emit({ type: "iteration.finished", iteration: e.iteration, changes: e.changes, task: e.record.task }, log);
        this.o.store.iterations.append({ ...e.record, at: new Date().toISOString(), tokens: s.tokens, cost_usd: s.costUsd });
        break;
      case "task.update":
        this.emit({ type: "task.updated", task: e.task, status: e.status, attempts: e.attempts, reason: e.reason }, log);
        break;
      case "wait":
        this.emit({ type: "phase.retry", phase: e.phase, attempt: e.attempt, delay_ms: e.ms, error: e.error, message: e.message }, log);
        break;
      case "stop":
        this.emit(
          {
            type: "run.finished",
            outcome: e.outcome,
            reason: e.reason,
            exit_code: exitCodeFor(e.outcome),
            iterations: s.iteration,
            tokens: s.tokens,
            cost_usd: s.costUsd,
            elapsed_ms: s.elapsedMs,
          },
          log,
        );
        break;
      default:
        break;
    }
  }

  /** Carry out one effect; returns the event that answers it, if any. */
  private async perform(e: Effect, log: RunEvent[]): Promise<MachineEvent | undefined> {
    switch (e.type) {
      case "iteration.begin":
        if (this.o.machine.measuresChanges) {
          this.iterationBaseline = takeBaseline(this.o.info.workdir);
          // kept on disk, so a resumed iteration measures from its real start
          writeFileAtomic(join(this.o.store.dir, "baseline.json"), JSON.stringify({ iteration: e.iteration, baseline: this.iterationBaseline }));
        }
        return undefined;
      case "tasks.load":
        try {
          const tasks = this.o.tasks ?? (await loadTasks(this.o.machine.tasks!, this.o.info.workdir));
          return { type: "tasks.loaded", at: this.now(), tasks };
        } catch (error) {
          this.emit({ type: "note", level: "warning", message: `cannot load the tasks: ${(error as Error).message}` }, log);
          return { type: "tasks.loaded", at: this.now(), tasks: [] };
        }
      case "task.update":
        try {
          if (this.o.machine.tasks) writeBackTask(this.o.machine.tasks, this.o.info.workdir, e);
        } catch (error) {
          this.emit({ type: "note", level: "warning", message: `cannot write task ${e.task} back: ${(error as Error).message}` }, log);
        }
        return undefined;
      case "wait": {
        await sleep(e.ms, this.o.signal);
        return this.interrupted ? undefined : { type: "retry.fired", at: this.now() };
      }
      case "hook.run":
        return this.runHook(e, log);
      case "phase.run":
        return this.runPhase(e, log);
      default:
        return undefined;
    }
  }

  private async runHook(e: Extract<Effect, { type: "hook.run" }>, log: RunEvent[]): Promise<MachineEvent | undefined> {
    const started = Date.now();
    const r = await runProcess({
      command: e.command,
      cwd: this.o.info.workdir,
      env: this.envWith(e.env),
      timeoutMs: e.timeoutMs,
      signal: e.blocking ? this.o.signal : undefined,
    });
    const failure = classifyProcess(r, [0]);
    const message = failure ? `${failure.message}${r.stderrTail.trim() ? `: ${r.stderrTail.trim().split("\n").pop()}` : ""}` : null;
    this.emit({ type: "hook.finished", hook: e.hook, ok: !failure, exit_code: r.exitCode, duration_ms: Date.now() - started, message }, log);
    if (!e.blocking || this.interrupted) return undefined;
    return { type: "hook.finished", at: this.now(), hook: e.hook, ok: !failure, message };
  }

  private async runPhase(e: Extract<Effect, { type: "phase.run" }>, log: RunEvent[]): Promise<MachineEvent | undefined> {
    const { machine, info, store } = this.o;
    const phase = machine.phases.find((p) => p.name === e.phase)!;
    const workdir = info.workdir;
    const dir = store.phaseDir(e.seq, e.phase);
    const base: Omit<PhaseResult, "exit_code" | "error" | "message"> = { output: {}, text: "", output_tail: "", tokens: 0, cost_usd: 0, duration_ms: 0, changes: this.snapshot.iterationChanges, jitter: Math.random() };
    const failEarly = (error: ErrorClass, message: string): MachineEvent => {
      this.emit(finishedEvent(e, phase, { ...base, exit_code: null, error, message }, []), log);
      return { type: "phase.finished", at: this.now(), phase: e.phase, attempt: e.attempt, result: { ...base, exit_code: null, error, message, output_tail: message } };
    };

    // output files are cleared first, so a stale file is never read as fresh
    const outputPaths: Record<string, string> = {};
    for (const [name, rel] of Object.entries(e.outputFiles)) {
      const abs = resolveInside(workdir, rel);
      if (!abs) return failEarly("policy_violation", `output file "${rel}" is outside the workdir`);
      outputPaths[name] = abs;
      rmSync(abs, { force: true });
    }

    let command: string | string[];
    let stdin: string | undefined;
    const env = this.envWith(e.env);
    let parser = parserFor("text");
    let builtin: { agent: AgentSpec; tools: ToolSetSpec | undefined } | undefined;
    const toolSet = phase.tools ? machine.tools[phase.tools] : undefined;
    if (phase.kind === "agent") {
      const agent = machine.agents[phase.agent!]!;
      const promptFile = join(dir, "prompt.md");
      mkdirSync(dir, { recursive: true });
      writeFileSync(promptFile, e.prompt ?? "");
      const extra = { prompt: e.prompt ?? "", prompt_file: promptFile };
      let renderError: string | undefined;
      const render = (text: string): string => {
        const t = parseTemplate(text);
        if (!t.template) {
          renderError ??= t.diagnostics[0]?.message;
          return text;
        }
        const r = renderTemplate(t.template, { ...e.context, ...extra });
        if (!r.ok) renderError ??= r.error;
        return r.ok ? r.value : "";
      };
      const tools = toolSet ? { ...toolSet, write: toolSet.write?.map(render), read: toolSet.read?.map(render), bash: toolSet.bash?.map(render) } : undefined;
      if (agent.preset === "openai") {
        // the built-in agent runs in this process; the phase.started event names its server
        builtin = { agent, tools };
        command = `openai-compatible ${openAiBaseUrl(agent)}/chat/completions${agent.model ? ` model ${agent.model}` : ""}`;
      } else {
        let adapter;
        try {
          adapter = getAdapter(agent);
        } catch (error) {
          return failEarly("spawn_error", (error as Error).message);
        }
        const inv = adapter.buildInvocation({ agent, prompt: e.prompt ?? "", promptFile, tools, workdir, render });
        command = inv.argv;
        stdin = inv.stdin;
        Object.assign(env, inv.env);
        parser = adapter.name === "command" ? parserFor(inv.outputFormat) : adapter.createParser();
      }
      if (renderError) return failEarly("spawn_error", `cannot render agent "${phase.agent}": ${renderError}`);
    } else {
      command = e.command!;
    }
    env.PHASELOOP_RUN_ID = info.run_id;
    env.PHASELOOP_ITERATION = String(e.iteration);
    env.PHASELOOP_PHASE = e.phase;
    env.PHASELOOP_ATTEMPT = String(e.attempt);
    env.PHASELOOP_TASK = this.snapshot.currentTask ?? "";
    env.PHASELOOP_PHASE_DIR = dir;

    const writeGlobs = toolSet?.write?.map((g) => renderGlob(g, e.context));
    const phaseBaseline = writeGlobs ? takeBaseline(workdir) : undefined;

    this.emit({ type: "phase.started", iteration: e.iteration, phase: e.phase, attempt: e.attempt, kind: phase.kind, dir: relative(store.dir, dir), command }, log);
    let r: ProcessResult;
    let report: AgentRunReport;
    if (builtin) {
      ({ process: r, report } = await this.runBuiltinAgent(builtin, e, phase, env, dir, log));
    } else {
      r = await runProcess({
        command,
        cwd: workdir,
        env,
        stdin,
        timeoutMs: phase.timeoutMs,
        idleTimeoutMs: phase.idleTimeoutMs ?? undefined,
        signal: this.o.signal,
        stdoutFile: join(dir, "stdout.log"),
        stderrFile: join(dir, "stderr.log"),
        onLine: (stream, line) => {
          if (stream === "stdout") parser.push(line);
          this.emit({ type: "phase.output", phase: e.phase, stream, line }, log);
        },
      });
      report = parser.finish(r.stdout);
    }
    if (r.aborted && this.interrupted) return undefined; // the run is interrupted; the phase re-runs on resume

    const text = phase.kind === "agent" ? report.text : r.stdout;
    let failure: { error: ErrorClass; message: string } | null = classifyProcess(r, phase.successExitCodes, phase.transient);
    if (!failure && report.success === false) failure = { error: report.error?.class ?? "agent_error", message: report.error?.message ?? "the agent reported failure" };
    if (!failure && report.error) failure = { error: report.error.class, message: report.error.message };
    if (failure?.error === "policy_violation" && report.permissionDenials.length > 0 && toolSet?.on_violation === "warn") {
      // the tool set asks only to hear of it
      this.emit({ type: "note", level: "warning", message: `${failure.message} (on_violation: warn)` }, log);
      failure = null;
    }

    // outputs: read only after the process ended
    const files: Record<string, string | undefined> = {};
    for (const [, abs] of Object.entries(outputPaths)) files[abs] = readIfFile(abs);
    const needsSchema = phase.outputSchema !== undefined || Object.values(phase.output).some((o) => o.schema);
    const extracted = extractOutputs(phase.output, { text, stdout: r.stdout, stderr: r.stderrTail, files }, outputPaths, needsSchema ? await schemaChecker() : undefined, phase.outputSchema);
    if (!failure && extracted.errors.length > 0) failure = { error: "output_invalid", message: extracted.errors.map((x) => x.message).join("; ") };

    // measured changes, and the write scope of the tool allowlist
    let changes = this.iterationBaseline ? changesSince(workdir, this.iterationBaseline) : [];
    if (writeGlobs && phaseBaseline) {
      const phaseChanges = changesSince(workdir, phaseBaseline);
      const { default: picomatch } = await import("picomatch");
      const allowed = picomatch(writeGlobs.length ? writeGlobs : ["\0"], { dot: true });
      const outside = phaseChanges.filter((p) => !allowed(p));
      if (outside.length > 0) {
        const action = toolSet?.on_violation ?? "fail";
        this.emit({ type: "policy.violation", phase: e.phase, paths: outside, action }, log);
        if (action === "revert") {
          const stuck = revertPaths(workdir, phaseBaseline, outside);
          if (this.iterationBaseline) changes = changesSince(workdir, this.iterationBaseline);
          failure ??= { error: "policy_violation", message: `changed files outside the write scope (reverted${stuck.length ? `, except ${stuck.join(", ")}` : ""}): ${outside.join(", ")}` };
        } else if (action === "fail") {
          failure ??= { error: "policy_violation", message: `changed files outside the write scope: ${outside.join(", ")}` };
        }
      }
    }

    const result: PhaseResult = {
      exit_code: r.exitCode,
      output: extracted.output,
      text,
      error: failure?.error ?? null,
      message: failure?.message ?? null,
      output_tail: (r.stdoutTail.slice(-3000) + (r.stderrTail.trim() ? `\n[stderr]\n${r.stderrTail.slice(-1500)}` : "")).trim(),
      tokens: report.tokens,
      cost_usd: report.costUsd,
      duration_ms: r.durationMs,
      changes,
      jitter: Math.random(),
    };
    // the extracted output, when there is any to keep
    if (Object.keys(phase.output).length > 0 || failure || report.tokens > 0 || phase.kind === "agent" || r.wroteLogs) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "output.json"), JSON.stringify({ status: failure ? "failed" : "succeeded", error: result.error, message: result.message, exit_code: r.exitCode, output: result.output, tokens: result.tokens, cost_usd: result.cost_usd, session_id: report.sessionId ?? null, permission_denials: report.permissionDenials }, null, 2) + "\n");
    }
    this.emit(finishedEvent(e, phase, result, changes), log);
    return { type: "phase.finished", at: this.now(), phase: e.phase, attempt: e.attempt, result };
  }

  /** The built-in OpenAI-compatible agent: its transcript goes to stdout.log and the reporter like a process's output. */
  private async runBuiltinAgent(
    builtin: { agent: AgentSpec; tools: ToolSetSpec | undefined },
    e: Extract<Effect, { type: "phase.run" }>,
    phase: CompiledPhase,
    env: Record<string, string | undefined>,
    dir: string,
    log: RunEvent[],
  ): Promise<OpenAiAgentResult> {
    const { default: picomatch } = await import("picomatch");
    const stdoutLog = join(dir, "stdout.log");
    return runOpenAiAgent({
      agent: builtin.agent,
      prompt: e.prompt ?? "",
      tools: builtin.tools,
      workdir: this.o.info.workdir,
      env,
      signal: this.o.signal,
      timeoutMs: phase.timeoutMs,
      idleTimeoutMs: phase.idleTimeoutMs ?? undefined,
      onLine: (line) => {
        appendFileSync(stdoutLog, `${line}\n`);
        this.emit({ type: "phase.output", phase: e.phase, stream: "stdout", line }, log);
      },
      glob: (patterns) => picomatch(patterns, { dot: true }),
      runCommand: async (argv, signal) => {
        // a command has the phase's idle timeout; the phase's own timeout and interrupts stop it through the signal
        const p = await runProcess({ command: argv, cwd: this.o.info.workdir, env, signal, idleTimeoutMs: phase.idleTimeoutMs ?? undefined });
        const output = (p.spawnError ? `${p.spawnError}\n` : "") + p.stdout + (p.stderrTail.trim() ? `\n[stderr]\n${p.stderrTail}` : "");
        return { exitCode: p.exitCode, output, timedOut: p.timedOut || p.idleTimedOut };
      },
    });
  }

  writeSummary(): void {
    try {
      const iterations = readFileSync(join(this.o.store.dir, "iterations.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .flatMap((l) => {
          try {
            return [JSON.parse(l)];
          } catch {
            return [];
          }
        });
      this.o.store.writeSummary(formatSummary(this.o.info, this.snapshot, iterations));
    } catch {
      // the summary is a convenience; the logs hold the truth
    }
  }
}

function finishedEvent(e: Extract<Effect, { type: "phase.run" }>, _phase: CompiledPhase, r: PhaseResult, changes: string[]): Record<string, unknown> & { type: "phase.finished" } {
  return {
    type: "phase.finished",
    iteration: e.iteration,
    phase: e.phase,
    attempt: e.attempt,
    status: r.error ? "failed" : "succeeded",
    error: r.error,
    message: r.message ?? null,
    exit_code: r.exit_code,
    duration_ms: r.duration_ms,
    tokens: r.tokens,
    cost_usd: r.cost_usd,
    output: r.output,
    changes,
  };
}

function renderGlob(glob: string, context: Record<string, JsonValue>): string {
  const t = parseTemplate(glob);
  if (!t.template) return glob;
  const r = renderTemplate(t.template as Template, context);
  return r.ok ? r.value.replace(/^\.\//, "") : glob;
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

function readIfFile(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return undefined;
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolveSleep) => {
    if (signal.aborted) return resolveSleep();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolveSleep();
    }
    signal.addEventListener("abort", done);
  });
}

/** Agent CLI versions for run.json (presets only; a missing CLI is recorded as such). */
export function agentVersions(machine: Machine): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, agent] of Object.entries(machine.agents)) {
    if (agent.command) {
      out[name] = `command: ${agent.command[0]}`;
      continue;
    }
    if (agent.preset === "openai") {
      out[name] = `openai-compatible: ${openAiBaseUrl(agent)}`;
      continue;
    }
    try {
      const argv = getAdapter(agent).versionArgv;
      if (!argv) continue;
      const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 5000, stdio: ["ignore", "pipe", "pipe"] });
      out[name] = r.status === 0 ? r.stdout.trim().split("\n")[0]! : "unavailable";
    } catch {
      out[name] = "unavailable";
    }
  }
  return out;
}
