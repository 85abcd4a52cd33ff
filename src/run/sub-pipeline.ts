/**
 * A `pipeline:` phase: the child pipeline runs as one phase of its parent,
 * with its own machine, limits and durable state in the parent's run folder
 * (`sub/NNNN-PHASE/`: run.json, state.json, events.jsonl, iterations.jsonl,
 * phases/, summary.md, and parent.json saying which phase run it belongs to).
 * Its outcome and its phases' results are the phase's result. A parent
 * resumed while the child was in flight finds the child's folder again and
 * continues inside it; a child that had ended before the parent's checkpoint
 * says so is not run again. The child's events stay in its own log; the
 * parent's reporter shows them live as the phase's output lines.
 */
import { dirname, join, relative, resolve } from "node:path";
import { isoNow, type HostFiles } from "../host/host.ts";
import { resolveParams } from "../machine/resolve-params.ts";
import { exitCodeFor } from "../machine/stop-logic.ts";
import { initialSnapshot } from "../machine/transition.ts";
import type { Effect, Machine, PhaseResult, Snapshot } from "../machine/types.ts";
import type { ErrorClass, JsonValue } from "../pipeline/spec.ts";
import { formatEventText, paintFor } from "./format-event-line.ts";
import { journalPath, lastJournalLine } from "../runtime/checkpoint-file.ts";
import { RunStore } from "../runtime/run-store.ts";
import { checkCheckpoint } from "./check-run-state.ts";
import { repairTornLogs, scanEventLog } from "./read-run-state.ts";
import type { Checkpoint } from "./checkpoint.ts";
import { measurePhaseChanges, openWriteScope } from "./phase-changes.ts";
import type { RunContext, RunResult } from "./run-context.ts";
import type { Reporter, RunEvent } from "./run-events.ts";
import { newRunInfo, runStartedEvent, type RunInfo } from "./run-info.ts";

type PhaseRunEffect = Extract<Effect, { type: "phase.run" }>;

/** Drives the child snapshot with the parent's options, made for the child's store (run-pipeline.ts's runChild: a machine inside a machine, with its own checkpoint). */
export type ChildRunner = (o: { machine: Machine; store: RunStore; info: RunInfo; reporter: Reporter; recordedIterations: Set<number> }, snapshot: Snapshot, seq: number, resumed: boolean, preface: Record<string, unknown>[]) => Promise<RunResult>;

/** Which phase run of the parent a child folder belongs to. */
interface ParentLink {
  phase: string;
  iteration: number;
  attempt: number;
  /** The parent's phases run before this one: tells apart two entries of the phase in one iteration. */
  phases_run: number;
}

/** Carry out a phase.run effect of a `pipeline:` phase. Undefined when the run was interrupted: the phase (and the child inside it) continues on resume. */
export async function runSubPipeline(e: PhaseRunEffect, ctx: RunContext, runChild: ChildRunner): Promise<PhaseResult | undefined> {
  const { clock, files } = ctx.host;
  const startedAt = clock.now();
  const base: PhaseResult = { exit_code: null, output: {}, text: "", error: null, message: null, output_tail: "", tokens: 0, cost_usd: 0, duration_ms: 0, changes: ctx.snapshot.iterationChanges, jitter: Math.random() };
  const fail = (error: ErrorClass, message: string, extra: Partial<PhaseResult> = {}): PhaseResult => {
    const r = { ...base, ...extra, error, message, output_tail: message, duration_ms: clock.now() - startedAt };
    ctx.emit(finishedEvent(e, r));
    return r;
  };
  // compiled with its parent (compile-loaded.ts): what validate accepted is what runs
  const child = ctx.machine.children?.[e.phase];
  if (!child) return fail("spawn_error", `the pipeline of phase "${e.phase}" (${e.pipeline ?? "?"}) was not compiled with ${ctx.machine.name}`);
  const machine = tightened(child.machine, ctx.sandboxFlag ?? ctx.machine.sandbox ?? "auto");
  const params = resolveParams(machine, e.params ?? {});
  if (params.diagnostics.length > 0) return fail("spawn_error", `phase "${e.phase}": ${params.diagnostics.map((d) => d.message).join("; ")}`);

  const link: ParentLink = { phase: e.phase, iteration: e.iteration, attempt: e.attempt, phases_run: ctx.snapshot.counters.phasesRun };
  const subRoot = join(ctx.store.dir, "sub");
  const found = findChild(files, subRoot, link);
  let earlier = found?.ready ? found.name : undefined;
  // a child whose checkpoint cannot be used (or no longer fits a changed child, resumed with --force) starts anew beside it
  let checkpoint = earlier ? readChild(files, join(subRoot, earlier)) : undefined;
  const problem = checkpoint && checkCheckpoint(checkpoint, machine);
  if (earlier && (!checkpoint || problem)) {
    ctx.emit({ type: "note", level: "warning", message: `the state of phase "${e.phase}"'s pipeline in sub/${earlier} cannot be continued (${problem ?? "state.json cannot be read"}); it runs again from its start` });
    earlier = undefined;
    checkpoint = undefined;
  }
  // a folder whose setup a crash cut short (no state.json yet) is this phase run's: it is set up again
  const folder = earlier ?? (found && !found.ready ? found.name : freeFolder(files, subRoot, e.seq, e.phase));
  const dir = join(subRoot, folder);
  const rel = relative(ctx.store.dir, dir);
  // the store's id is its folder under .phaseloop/runs (a child of a child nests in its parent's)
  const childId = relative(join(ctx.info.workdir, ".phaseloop", "runs"), dir);
  ctx.changes?.touched();
  const scope = openWriteScope(undefined, e.context, ctx);
  ctx.emit({ type: "phase.started", iteration: e.iteration, phase: e.phase, attempt: e.attempt, kind: "pipeline", dir: folder, command: child.file, sub: rel });

  const file = resolve(child.source.file);
  // the parent's id: the child's processes are the run's, found and stopped with it
  const info: RunInfo = newRunInfo({ runId: ctx.info.run_id, machine, sources: child.source, file, params: params.params, workdir: ctx.info.workdir, maxIterations: 0, startedAt: new Date(clock.now()) });
  let resumed = checkpoint !== undefined;
  if (!checkpoint) {
    const snapshot = initialSnapshot(machine, { runId: ctx.info.run_id, params: params.params, env: ctx.snapshot.info.env, pipeline: { name: machine.name, file, dir: dirname(file) }, workdir: ctx.info.workdir });
    info.max_iterations = snapshot.limits.maxIterations;
    checkpoint = { snapshot, seq: 0, pending: [], updated_at: isoNow(clock) };
    files.mkdir(join(dir, "phases"));
    // parent.json first: a folder holding it is found again by this phase run, however far its setup went
    files.writeAtomic(join(dir, "parent.json"), JSON.stringify(link) + "\n");
    files.writeAtomic(join(dir, "run.json"), JSON.stringify(info, null, 2) + "\n");
    files.writeAtomic(join(dir, "state.json"), JSON.stringify(checkpoint));
    resumed = false;
  } else info.max_iterations = checkpoint.snapshot.limits.maxIterations;

  let result: { outcome: RunResult["outcome"]; snapshot: Snapshot };
  // a child from an earlier life of the parent: its logs repaired as resume repairs the run's own
  if (resumed) repairChild(files, dir, ctx.info.run_id);
  const store = new RunStore(ctx.info.workdir, childId, undefined, files);
  try {
    // what the child's checkpoint carries and a crash kept from its logs, appended (never twice)
    const recorded = store.recordedIterations();
    store.iterations.appendMany((checkpoint.pending_iterations ?? []).filter((r) => !recorded.has(r.iteration)));
    const logged = store.lastEventSeq();
    store.events.appendMany(checkpoint.pending.filter((p) => p.seq > logged));
    const seq = Math.max(logged, checkpoint.seq, ...checkpoint.pending.map((p) => p.seq));
    const snapshot = checkpoint.snapshot;
    if (snapshot.status === "done") {
      // the child ended before the parent could record it: its outcome stands, and its log ends with it
      const o = snapshot.outcome;
      const scan = scanEventLog(dir, ctx.info.run_id, true, files);
      if (o && scan.ok && !scan.value.finished) store.events.append({ v: 1, seq: seq + 1, at: isoNow(clock), run: ctx.info.run_id, type: "run.finished", outcome: o.outcome, reason: o.reason, exit_code: exitCodeFor(o.outcome), iterations: snapshot.iteration, tokens: snapshot.tokens, cost_usd: snapshot.costUsd, elapsed_ms: snapshot.elapsedMs });
      result = { outcome: o?.outcome === "stopped" ? "stopped" : (o?.outcome ?? "failed"), snapshot };
    } else {
      // a child stopped before it logged anything starts its log now
      const preface = resumed && seq > 0
        ? [{ type: "run.resumed", iteration: snapshot.iteration, phase: snapshot.awaiting?.kind === "phase" ? snapshot.awaiting.phase : null, pipeline: machine.name, workdir: info.workdir, max_iterations: snapshot.limits.maxIterations }]
        : [runStartedEvent(machine, info)];
      result = await runChild({ machine, store, info, reporter: forward(e.phase, machine.name, ctx), recordedIterations: store.recordedIterations() }, snapshot, seq, resumed, preface);
    }
  } finally {
    store.close();
  }
  if (result.outcome === "interrupted" || ctx.interrupted()) return undefined;

  const { changes } = await measurePhaseChanges(e.phase, scope, ctx);
  const s = result.snapshot;
  const outcome = result.outcome === "awaiting" ? "blocked" : result.outcome;
  const reason = result.outcome === "awaiting" ? `phase "${s.awaiting?.kind === "answer" ? s.awaiting.phase : "?"}" of ${machine.name} waits for an answer, which a sub-pipeline takes only in a terminal` : (s.outcome?.reason.message ?? outcome);
  const phases: Record<string, JsonValue> = {};
  for (const [name, r] of Object.entries(s.results)) if (r.status !== "pending") phases[name] = { status: r.status, exit_code: r.exit_code, output: r.output, error: r.error };
  const output: Record<string, JsonValue> = { outcome, reason, code: s.outcome?.reason.code ?? "awaiting_answer", iterations: s.iteration, phases };
  const r: PhaseResult = {
    ...base,
    exit_code: null,
    output,
    text: reason,
    error: outcome === "complete" ? null : "pipeline_failed",
    message: outcome === "complete" ? null : `${machine.name} ended ${outcome}: ${reason}`,
    output_tail: reason,
    tokens: s.tokens,
    cost_usd: s.costUsd,
    duration_ms: clock.now() - startedAt,
    changes,
  };
  ctx.emit(finishedEvent(e, r));
  return r;
}

const STRENGTH = { off: 0, auto: 1, required: 2 } as const;

/**
 * The child under its parent's sandbox: the pipeline's, each phase's and each
 * hook's mode never weaker than `parent` (a child can only tighten; validate
 * calls a weaker one an error, SUB_PIPELINE_SANDBOX).
 */
function tightened(machine: Machine, parent: keyof typeof STRENGTH): Machine {
  const at = (mode: keyof typeof STRENGTH | undefined) => (mode !== undefined && STRENGTH[mode] >= STRENGTH[parent] ? mode : parent);
  const own = machine.sandbox ?? "auto";
  const sandbox = STRENGTH[own] >= STRENGTH[parent] ? own : parent;
  const hooks: Machine["hooks"] = {};
  for (const [k, h] of Object.entries(machine.hooks)) if (h) hooks[k as keyof Machine["hooks"]] = h.sandbox !== undefined ? { ...h, sandbox: at(h.sandbox) } : h;
  return { ...machine, sandbox, phases: machine.phases.map((p) => (p.sandbox !== undefined ? { ...p, sandbox: at(p.sandbox) } : p)), hooks };
}

/**
 * The child folder of this phase run, from an earlier life of the parent: one left in flight, or
 * one that ended before the parent recorded it (`ready`: it has its state.json), or one whose
 * setup a crash cut short.
 */
function findChild(files: HostFiles, subRoot: string, link: ParentLink): { name: string; ready: boolean } | undefined {
  let names: string[];
  try {
    names = files.readdir(subRoot).filter((n) => n.endsWith(`-${link.phase}`)).sort().reverse();
  } catch {
    return undefined;
  }
  for (const name of names) {
    try {
      const saved = JSON.parse(files.readText(join(subRoot, name, "parent.json"))) as ParentLink;
      if (saved.phase === link.phase && saved.iteration === link.iteration && saved.attempt === link.attempt && saved.phases_run === link.phases_run) return { name, ready: hasCheckpoint(files, join(subRoot, name)) };
    } catch {
      // not a child folder this run can use
    }
  }
  return undefined;
}

/** Whether the child wrote a checkpoint: its state.json, or where a crash while replacing it left it (see CheckpointFile). */
function hasCheckpoint(files: HostFiles, dir: string): boolean {
  const state = join(dir, "state.json");
  return [state, `${state}.next`, journalPath(state)].some((f) => files.exists(f));
}

/**
 * A child's folder as a crash left it, repaired as resume repairs the run's own: a line torn at
 * the end of a log is cut off (a log unreadable further up is left as it is), and a checkpoint
 * found only in state.json.next (a crash between replacing one with the other) is put back in place.
 */
function repairChild(files: HostFiles, dir: string, runId: string): void {
  const state = join(dir, "state.json");
  if (!files.exists(state) && files.exists(`${state}.next`)) files.rename(`${state}.next`, state);
  repairTornLogs(dir, runId, files);
}

/** A folder no child holds: missing, or one a crash left before its parent.json was written. */
function freeFolder(files: HostFiles, subRoot: string, seq: number, phase: string): string {
  const name = `${String(seq).padStart(4, "0")}-${phase}`;
  const free = (n: string) => !files.exists(join(subRoot, n, "parent.json"));
  if (free(name)) return name;
  for (let i = 2; ; i++) if (free(`${name}-${i}`)) return `${name}-${i}`;
}

function readChild(files: HostFiles, dir: string): Checkpoint | undefined {
  const state = join(dir, "state.json");
  // the journal's last whole line is the newest checkpoint, when there is one (see CheckpointFile)
  for (const text of [() => lastJournalLine(journalPath(state), files), () => files.readText(state), () => files.readText(`${state}.next`)]) {
    try {
      const cp = JSON.parse(text() ?? "") as Checkpoint;
      if (cp && typeof cp === "object" && cp.snapshot && typeof cp.snapshot === "object" && Array.isArray(cp.pending)) return cp;
    } catch {
      // try the next
    }
  }
  return undefined;
}

/** The child's events, shown live under the parent's phase as its output lines (its own log keeps them). */
function forward(phase: string, name: string, ctx: RunContext): Reporter {
  const paint = paintFor(false);
  return {
    onEvent(event: RunEvent) {
      if (event.type === "phase.output") ctx.emit({ type: "phase.output", phase, stream: event.stream, line: event.line });
      else ctx.emit({ type: "phase.output", phase, stream: "stdout", line: `${name} › ${formatEventText(event, paint)}` });
    },
    close: async () => undefined,
  };
}

function finishedEvent(e: PhaseRunEffect, r: PhaseResult): Record<string, unknown> & { type: "phase.finished" } {
  return { type: "phase.finished", iteration: e.iteration, phase: e.phase, attempt: e.attempt, status: r.error ? "failed" : "succeeded", error: r.error, message: r.message ?? null, exit_code: r.exit_code, duration_ms: r.duration_ms, tokens: r.tokens, cost_usd: r.cost_usd, output: r.output, changes: r.changes };
}
