/**
 * The state machine: `transition(machine, snapshot, event)` returns the next
 * snapshot and the effects to carry out, and carries out none of them. Pure
 * and deterministic: no clock (time comes in events), no randomness (jitter
 * comes in events), and the input snapshot is never mutated.
 *
 * The stop logic and its precedence are documented in docs/stop-logic.md.
 */
import { evaluateExpression, isTruthy, renderTemplate, shellQuote, type Template } from "../expr/index.ts";
import type { HistoryEntry } from "../pipeline/context.ts";
import type { ErrorClass, HookName, JsonValue, Outcome } from "../pipeline/spec.ts";
import { asRecord, buildContext, pendingPhase } from "./build-context.ts";
import { cloneJson } from "./clone-json.ts";
import type { CompiledPhase, Effect, LimitSource, Machine, MachineEvent, PhaseResult, Snapshot, StopReason, TaskItem, TaskState, TransitionResult } from "./types.ts";

/** Caps that keep the snapshot bounded however long the run. */
export const CAPS = { history: 20, text: 16_000, textTail: 2_000, outputTail: 4_000, outputJson: 8_000 } as const;

export interface InitialOptions {
  runId: string;
  params: Record<string, JsonValue>;
  /** Environment variables the pipeline reads (machine.envNames), by name. */
  env?: Record<string, string>;
  pipeline: { name: string; file: string; dir: string };
  workdir: string;
}

export function resolveLimit(source: LimitSource | null, params: Record<string, JsonValue>): number | null {
  if (source === null) return null;
  if (typeof source === "number") return source;
  const r = renderTemplate(source, { params });
  if (!r.ok) return null;
  const n = Number(r.value.trim());
  return Number.isInteger(n) && n >= 0 ? n : null;
}

export function initialSnapshot(machine: Machine, options: InitialOptions): Snapshot {
  const p = options.params;
  return {
    v: 1,
    runId: options.runId,
    status: "idle",
    params: p,
    limits: {
      maxIterations: resolveLimit(machine.limits.maxIterations, p) ?? 1,
      maxDurationMs: machine.limits.maxDurationMs,
      noProgress: resolveLimit(machine.limits.noProgress, p),
      consecutiveFailures: resolveLimit(machine.limits.consecutiveFailures, p),
      budgetTokens: machine.limits.budgetTokens,
      budgetCostUsd: machine.limits.budgetCostUsd,
      taskAttempts: machine.tasks ? (resolveLimit(machine.tasks.maxAttempts, p) ?? 5) : 0,
    },
    iteration: 0,
    awaiting: null,
    phaseSeq: 0,
    results: {},
    iterationPhases: {},
    iterationChanges: [],
    history: [],
    lastFailure: null,
    counters: { consecutiveFailures: 0, noProgress: 0, phaseFailures: {}, phasesRun: 0, retries: 0 },
    tokens: 0,
    costUsd: 0,
    elapsedMs: 0,
    lastAt: null,
    tasks: null,
    currentTask: null,
    lastDoneTask: null,
    gateRunning: false,
    iterationOpen: false,
    outcome: null,
    info: { pipeline: options.pipeline, workdir: options.workdir, env: options.env ?? {} },
  };
}

/**
 * A copy the transition may change. History entries, most of a snapshot, are
 * never changed once recorded, so the copies share them.
 */
function cloneSnapshot(snapshot: Snapshot): Snapshot {
  const copy: Snapshot = cloneJson({ ...snapshot, history: [] });
  copy.history = snapshot.history.slice();
  return copy;
}

/** The next snapshot and the effects to carry out. Never mutates its input. */
export function transition(machine: Machine, snapshot: Snapshot, event: MachineEvent): TransitionResult {
  const s = cloneSnapshot(snapshot);
  const fx: Effect[] = [];
  if (s.status === "done") return { snapshot: s, effects: [] };
  if (event.type === "resumed") {
    s.lastAt = event.at; // time spent interrupted does not count
  } else {
    if (s.lastAt !== null && event.at > s.lastAt) s.elapsedMs += event.at - s.lastAt;
    s.lastAt = event.at;
  }
  const run = new Run(machine, s, fx);
  switch (event.type) {
    case "start":
      if (s.status !== "idle") break;
      s.status = "running";
      if (machine.tasks) {
        s.awaiting = { kind: "tasks" };
        fx.push({ type: "tasks.load" });
      } else run.beginIteration();
      break;
    case "tasks.loaded":
      if (s.awaiting?.kind !== "tasks") break;
      s.awaiting = null;
      s.tasks = event.tasks.map(toTaskState);
      run.beginIteration();
      break;
    case "phase.finished":
      if (s.awaiting?.kind !== "phase" || s.awaiting.phase !== event.phase || s.awaiting.attempt !== event.attempt) {
        fx.push({ type: "note", level: "warning", message: `ignored a result for phase "${event.phase}" that was not running` });
        break;
      }
      run.phaseFinished(event.phase, event.attempt, event.result);
      break;
    case "retry.fired":
      if (s.awaiting?.kind !== "retry") break;
      s.status = "running";
      run.runPhase(run.phase(s.awaiting.phase), s.awaiting.attempt);
      break;
    case "hook.finished": {
      const a = s.awaiting;
      if (a?.kind !== "hook" || a.hook !== event.hook) break;
      s.awaiting = null;
      if (!event.ok) {
        run.stop("blocked", { code: "hook_blocked", message: `hook ${event.hook} failed${event.message ? `: ${event.message}` : ""}` });
        break;
      }
      if (a.then === "iteration") run.enterPhase(machine.head);
      else run.beginIteration();
      break;
    }
    case "interrupted":
      s.status = "interrupted";
      break;
    case "resumed": {
      if (s.status !== "interrupted" && s.status !== "running" && s.status !== "waiting") break;
      s.status = "running";
      const a = s.awaiting;
      if (!a && s.iteration === 0 && machine.tasks && !s.tasks) {
        // stopped before it read its tasks
        s.awaiting = { kind: "tasks" };
        fx.push({ type: "tasks.load" });
      } else if (!a) run.beginIteration();
      else if (a.kind === "phase" || a.kind === "retry") run.runPhase(run.phase(a.phase), a.attempt);
      else if (a.kind === "tasks") fx.push({ type: "tasks.load" });
      else if (a.kind === "hook") run.runHook(a.hook, true, a.then);
      break;
    }
  }
  return { snapshot: s, effects: fx };
}

function toTaskState(t: TaskItem, order: number): TaskState {
  return {
    id: t.id,
    title: t.title,
    body: t.body,
    status: t.done ? "done" : t.blocked ? "blocked" : "pending",
    attempts: t.attempts,
    priority: t.priority,
    depends_on: t.depends_on,
    notes: t.notes,
    order,
    reason: null,
  };
}

const cap = (text: string, n: number) => (text.length > n ? text.slice(-n) : text);

function capValue(v: JsonValue): JsonValue {
  const json = JSON.stringify(v);
  return json !== undefined && json.length > CAPS.outputJson ? `${json.slice(0, CAPS.outputJson)}… (truncated)` : v;
}

/** The working state of one transition: the draft snapshot and the effects so far. */
class Run {
  readonly m: Machine;
  readonly s: Snapshot;
  readonly fx: Effect[];
  constructor(m: Machine, s: Snapshot, fx: Effect[]) {
    this.m = m;
    this.s = s;
    this.fx = fx;
  }

  phase(name: string): CompiledPhase {
    const p = this.m.phases.find((x) => x.name === name);
    if (!p) throw new Error(`unknown phase "${name}"`);
    return p;
  }

  ctx(phase?: string): Record<string, JsonValue> {
    return asRecord(buildContext(this.m, this.s, phase));
  }

  render(t: Template | undefined, ctx: Record<string, JsonValue>, quote = false): { ok: true; value: string } | { ok: false; error: string } {
    if (!t) return { ok: true, value: "" };
    const r = renderTemplate(t, ctx, quote ? { quote: shellQuote } : {});
    return r.ok ? r : { ok: false, error: r.error };
  }

  // ── iterations ─────────────────────────────────────────────────────────────

  beginIteration(): void {
    const s = this.s;
    if (this.m.tasks && s.tasks) {
      const q = this.queue();
      if (q.kind === "all-done") return this.allTasksDone();
      if (q.kind === "blocked") return this.stop("blocked", { code: "tasks_blocked", message: q.message });
      if (s.iteration >= s.limits.maxIterations) return this.stopLimit();
      s.currentTask = q.task;
    } else if (s.iteration >= s.limits.maxIterations) return this.stopLimit();
    s.iteration += 1;
    s.iterationPhases = {};
    s.iterationChanges = [];
    s.iterationOpen = true;
    this.fx.push({ type: "iteration.begin", iteration: s.iteration, task: s.currentTask });
    if (this.m.hooks.before_iteration && this.runHook("before_iteration", this.m.hooks.before_iteration.onFailure === "block", "iteration")) return;
    this.enterPhase(this.m.head);
  }

  stopLimit(): void {
    const n = this.s.limits.maxIterations;
    this.stop("stopped", { code: "max_iterations", message: `reached max_iterations (${n}) without completing` });
  }

  /** Close the current iteration. Returns true when the run stopped or waits for a hook. */
  endIteration(): boolean {
    const s = this.s;
    if (!s.iterationOpen) return false;
    s.iterationOpen = false;
    const record: HistoryEntry = { iteration: s.iteration, phases: s.iterationPhases, changes: s.iterationChanges, task: s.currentTask };
    s.history.push(record);
    if (s.history.length > CAPS.history) s.history.splice(0, s.history.length - CAPS.history);
    this.fx.push({ type: "iteration.end", iteration: s.iteration, changes: s.iterationChanges, record });
    // a task that was worked on and not finished spent one attempt
    const task = s.tasks?.find((t) => t.id === s.currentTask);
    if (task && task.status === "pending") {
      task.attempts += 1;
      const rejection = task.rejection ?? null;
      task.rejection = null;
      if (rejection) task.notes = [...task.notes, `[REJECTED] ${rejection}`];
      if (task.attempts >= s.limits.taskAttempts) {
        task.status = "blocked";
        task.reason = `not done after ${task.attempts} attempt${task.attempts === 1 ? "" : "s"}${rejection ? `; last: ${rejection}` : ""}`;
        task.notes = [...task.notes, `[BLOCKED] ${task.reason}`];
      }
      this.fx.push({ type: "task.update", task: task.id, status: task.status, attempts: task.attempts, reason: task.status === "blocked" ? task.reason : rejection });
    }
    s.currentTask = null;
    s.counters.noProgress = s.iterationChanges.length === 0 ? s.counters.noProgress + 1 : 0;
    const limit = s.limits.noProgress;
    if (limit !== null && limit > 0 && s.counters.noProgress >= limit) {
      this.stop("stopped", { code: "no_progress", message: `no file changed in ${s.counters.noProgress} iteration${s.counters.noProgress === 1 ? "" : "s"} in a row (no_progress: ${limit})` });
      return true;
    }
    return false;
  }

  /** Control enters the loop head: the iteration ends and the next begins. */
  nextIteration(): void {
    // the iteration that finished the last task also runs the final gate
    const gate = this.m.tasks?.finalGate;
    if (gate && this.s.tasks && this.s.iterationOpen && !this.s.gateRunning && this.queue().kind === "all-done") {
      this.s.gateRunning = true;
      this.s.currentTask = null; // the gate checks the whole, not one task
      return this.runPhase(this.phase(gate), 1);
    }
    if (this.endIteration()) return;
    if (this.m.hooks.after_iteration && this.runHook("after_iteration", this.m.hooks.after_iteration.onFailure === "block", "next-iteration")) return;
    this.beginIteration();
  }

  // ── phases ─────────────────────────────────────────────────────────────────

  /** Enter a phase, skipping those whose `when` does not hold. */
  enterPhase(name: string): void {
    let phase = this.phase(name);
    for (let hops = 0; hops <= this.m.phases.length; hops++) {
      if (!phase.when) return this.runPhase(phase, 1);
      const r = evaluateExpression(phase.when, this.ctx());
      if (r.ok && isTruthy(r.value)) return this.runPhase(phase, 1);
      const reason = r.ok ? `when: ${phase.whenText} is false` : `when: ${phase.whenText} could not be evaluated (${r.error})`;
      this.fx.push({ type: "phase.skipped", phase: phase.name, iteration: this.s.iteration, reason });
      this.s.results[phase.name] = { ...(this.s.results[phase.name] ?? pendingPhase()), status: "skipped", iteration: this.s.iteration };
      this.s.iterationPhases[phase.name] = { status: "skipped", error: null, exit_code: null, output: {}, text_tail: "" };
      const next = this.m.phases[phase.index + 1];
      if (!next) return this.nextIteration();
      phase = next;
    }
    this.nextIteration();
  }

  runPhase(phase: CompiledPhase, attempt: number): void {
    const s = this.s;
    s.phaseSeq += 1;
    s.status = "running";
    s.awaiting = { kind: "phase", phase: phase.name, attempt, seq: s.phaseSeq };
    const ctx = this.ctx();
    let problem: string | undefined;
    const text = (t: Template | undefined, quote = false) => {
      const r = this.render(t, ctx, quote);
      if (!r.ok) problem ??= r.error;
      return r.ok ? r.value : "";
    };
    const prompt = phase.kind === "agent" ? text(phase.prompt) : undefined;
    const command = phase.run ? ("shell" in phase.run ? text(phase.run.shell, true) : phase.run.argv.map((a) => text(a))) : undefined;
    const env: Record<string, string> = {};
    for (const [k, t] of Object.entries(this.m.env)) env[k] = text(t);
    for (const [k, t] of Object.entries(phase.env)) env[k] = text(t);
    const outputFiles: Record<string, string> = {};
    for (const [k, t] of Object.entries(phase.outputFiles)) outputFiles[k] = text(t);
    if (problem !== undefined) {
      const message = `cannot render phase "${phase.name}": ${problem}`;
      this.fx.push({ type: "phase.error", phase: phase.name, iteration: s.iteration, message });
      this.phaseFinished(phase.name, attempt, {
        exit_code: null, output: {}, text: "", error: "spawn_error", message, output_tail: message, tokens: 0, cost_usd: 0, duration_ms: 0, changes: s.iterationChanges, jitter: 0,
      });
      return;
    }
    this.fx.push({ type: "phase.run", phase: phase.name, kind: phase.kind, iteration: s.iteration, attempt, seq: s.phaseSeq, prompt, command, env, outputFiles, context: ctx });
  }

  phaseFinished(name: string, attempt: number, r: PhaseResult): void {
    const s = this.s;
    const phase = this.phase(name);
    s.awaiting = null;
    s.tokens += r.tokens;
    s.costUsd += r.cost_usd;
    s.counters.phasesRun += 1;
    s.iterationChanges = [...r.changes];
    const failed = r.error !== null;

    if (failed && phase.retry.on.includes(r.error!) && attempt < phase.retry.maxAttempts) {
      // limits that do not wait for the phase still apply while retrying
      if (this.checkBudgetAndDuration()) return;
      const base = Math.min(phase.retry.intervalMs * phase.retry.backoff ** (attempt - 1), phase.retry.maxDelayMs);
      const ms = Math.round(phase.retry.jitter ? base / 2 + (Math.min(Math.max(r.jitter, 0), 1) * base) / 2 : base);
      s.counters.retries += 1;
      s.status = "waiting";
      s.awaiting = { kind: "retry", phase: name, attempt: attempt + 1, delayMs: ms };
      this.fx.push({ type: "wait", ms, phase: name, attempt: attempt + 1, error: r.error!, message: r.message ?? null });
      return;
    }

    s.results[name] = {
      status: failed ? "failed" : "succeeded",
      exit_code: r.exit_code,
      output: r.output,
      text: cap(r.text, CAPS.text),
      error: r.error,
      attempts: attempt,
      duration_ms: r.duration_ms,
      tokens: r.tokens,
      cost_usd: r.cost_usd,
      iteration: s.iteration,
    };
    const output: Record<string, JsonValue> = {};
    for (const [k, v] of Object.entries(r.output)) output[k] = capValue(v);
    s.iterationPhases[name] = { status: failed ? "failed" : "succeeded", error: r.error, exit_code: r.exit_code, output, text_tail: cap(r.text, CAPS.textTail) };
    if (failed) {
      s.lastFailure = { phase: name, iteration: s.iteration, error: r.error!, exit_code: r.exit_code, output_tail: cap(r.output_tail, CAPS.outputTail), message: r.message ?? r.error! };
      if (r.error !== "transient") {
        s.counters.consecutiveFailures += 1;
        s.counters.phaseFailures[name] = (s.counters.phaseFailures[name] ?? 0) + 1;
      }
    } else {
      s.counters.consecutiveFailures = 0;
      s.counters.phaseFailures[name] = 0;
    }

    if (s.gateRunning && this.m.tasks?.finalGate === name) return this.gateFinished(!failed, r);

    // where control goes: the first rule whose `if` holds
    const ctx = this.ctx(name);
    let chosen: (typeof phase.rules)[number] | undefined;
    for (const rule of phase.rules) {
      if (!rule.if) {
        chosen = rule;
        break;
      }
      const v = evaluateExpression(rule.if, ctx);
      if (!v.ok) {
        this.fx.push({ type: "note", level: "warning", message: `phase "${name}": rule "${rule.ifText}" could not be evaluated (${v.error}); it does not apply` });
        continue;
      }
      if (isTruthy(v.value)) {
        chosen = rule;
        break;
      }
    }
    const reasonText = (fallback: string) => {
      if (!chosen?.reason) return fallback;
      const rr = this.render(chosen.reason, ctx);
      return rr.ok && rr.value.trim() !== "" ? rr.value : fallback;
    };
    if (chosen?.task) this.markTask(chosen.task, reasonText(`marked ${chosen.task} by phase "${name}"`));
    else if (chosen?.reason && !chosen.stop) {
      // a reason on a rule that goes on: why this attempt did not finish the current task
      const current = s.tasks?.find((t) => t.id === s.currentTask && t.status === "pending");
      const text = reasonText("");
      if (current && text) current.rejection = text;
    }

    // 1. an explicit stop from the phase's own rule
    if (chosen?.stop) {
      return this.stop(chosen.stop, { code: "transition", message: reasonText(`phase "${name}" ended the run: ${chosen.stop}${chosen.ifText ? ` (${chosen.ifText})` : ""}`) });
    }
    // 2. stop.when rules
    if (this.checkStopRules()) return;
    // 3. budgets and max_duration
    if (this.checkBudgetAndDuration()) return;
    // 4. breakers
    const cf = s.limits.consecutiveFailures;
    if (cf !== null && cf > 0 && s.counters.consecutiveFailures >= cf) {
      return this.stop("stopped", { code: "consecutive_failures", message: `${s.counters.consecutiveFailures} phases failed in a row (consecutive_failures: ${cf}); last: ${s.lastFailure?.message ?? "?"}` });
    }
    const pf = phase.consecutiveFailures;
    if (pf !== null && (s.counters.phaseFailures[name] ?? 0) >= pf) {
      return this.stop("stopped", { code: "phase_failures", message: `phase "${name}" failed ${pf} time${pf === 1 ? "" : "s"} in a row; last: ${s.lastFailure?.message ?? "?"}` });
    }
    // 5. go on: an explicit goto, or fall through in file order
    const target = chosen?.goto ?? this.m.phases[phase.index + 1]?.name ?? this.m.head;
    if (target === this.m.head) return this.nextIteration();
    this.enterPhase(target);
  }

  checkStopRules(): boolean {
    if (this.m.stopRules.length === 0) return false;
    const ctx = this.ctx();
    for (const rule of this.m.stopRules) {
      const v = evaluateExpression(rule.if, ctx);
      if (!v.ok) {
        this.fx.push({ type: "note", level: "warning", message: `stop rule "${rule.ifText}" could not be evaluated (${v.error})` });
        continue;
      }
      if (isTruthy(v.value)) {
        const rr = rule.reason ? this.render(rule.reason, ctx) : undefined;
        this.stop(rule.outcome, { code: "stop_rule", message: rr?.ok && rr.value.trim() ? rr.value : `stop rule: ${rule.ifText}` });
        return true;
      }
    }
    return false;
  }

  checkBudgetAndDuration(): boolean {
    const s = this.s;
    const l = s.limits;
    if (l.budgetTokens !== null && s.tokens >= l.budgetTokens) {
      this.stop("stopped", { code: "budget_tokens", message: `used ${s.tokens} tokens of a budget of ${l.budgetTokens}` });
      return true;
    }
    if (l.budgetCostUsd !== null && s.costUsd >= l.budgetCostUsd) {
      this.stop("stopped", { code: "budget_cost", message: `spent $${s.costUsd.toFixed(2)} of a budget of $${l.budgetCostUsd.toFixed(2)}` });
      return true;
    }
    if (l.maxDurationMs !== null && s.elapsedMs >= l.maxDurationMs) {
      this.stop("stopped", { code: "max_duration", message: `ran for ${Math.round(s.elapsedMs / 1000)}s, over max_duration (${Math.round(l.maxDurationMs / 1000)}s)` });
      return true;
    }
    return false;
  }

  // ── tasks ──────────────────────────────────────────────────────────────────

  onlyTask(): string | undefined {
    const t = this.m.tasks?.only;
    if (!t) return undefined;
    const r = this.render(t, this.ctx());
    return r.ok && r.value.trim() !== "" ? r.value.trim() : undefined;
  }

  /** What the queue holds next: a task to work on, all done, or nothing workable. */
  queue(): { kind: "next"; task: string } | { kind: "all-done" } | { kind: "blocked"; message: string } {
    const tasks = this.s.tasks!;
    const byId = new Map(tasks.map((t) => [t.id, t]));
    // a blocked (or unknown) dependency blocks its dependents, transitively
    for (let changed = true; changed; ) {
      changed = false;
      for (const t of tasks) {
        if (t.status !== "pending") continue;
        const dep = t.depends_on.find((d) => !byId.has(d) || byId.get(d)!.status === "blocked");
        if (dep === undefined) continue;
        t.status = "blocked";
        t.reason = byId.has(dep) ? `dependency ${dep} is blocked` : `dependency ${dep} does not exist`;
        this.fx.push({ type: "task.update", task: t.id, status: "blocked", attempts: t.attempts, reason: t.reason });
        changed = true;
      }
    }
    const only = this.onlyTask();
    const scope = only !== undefined ? tasks.filter((t) => t.id === only) : tasks;
    if (only !== undefined && scope.length === 0) return { kind: "blocked", message: `no task "${only}" in the queue` };
    const ready = scope
      .filter((t) => t.status === "pending" && t.depends_on.every((d) => byId.get(d)?.status === "done"))
      .sort((a, b) => (this.m.tasks!.order === "priority" ? (a.priority ?? Infinity) - (b.priority ?? Infinity) : 0) || a.order - b.order);
    if (ready[0]) return { kind: "next", task: ready[0].id };
    const pending = scope.filter((t) => t.status === "pending");
    const blocked = scope.filter((t) => t.status === "blocked");
    if (pending.length === 0 && blocked.length === 0) return { kind: "all-done" };
    if (pending.length > 0) return { kind: "blocked", message: `tasks ${pending.map((t) => t.id).join(", ")} wait on dependencies that cannot finish` };
    return { kind: "blocked", message: `${blocked.length} task${blocked.length === 1 ? " is" : "s are"} blocked: ${blocked.map((t) => `${t.id} (${t.reason ?? "blocked"})`).join("; ")}` };
  }

  markTask(status: "done" | "blocked", reason: string): void {
    const s = this.s;
    const t = s.tasks?.find((x) => x.id === s.currentTask);
    if (!t) {
      this.fx.push({ type: "note", level: "warning", message: `a rule marks the current task ${status}, but no task is current` });
      return;
    }
    t.status = status;
    t.reason = status === "blocked" ? reason : null;
    if (status === "blocked") t.notes = [...t.notes, `[BLOCKED] ${reason}`];
    if (status === "done") s.lastDoneTask = t.id;
    this.fx.push({ type: "task.update", task: t.id, status, attempts: t.attempts, reason: t.reason });
  }

  allTasksDone(): void {
    const gate = this.m.tasks?.finalGate;
    if (!gate) return this.stop("complete", { code: "tasks_done", message: `all ${this.s.tasks!.length} tasks are done` });
    if (!this.s.iterationOpen) {
      // the gate runs within an iteration: the one that finished the last task, or a new one
      if (this.s.iteration >= this.s.limits.maxIterations) return this.stopLimit();
      this.s.iteration += 1;
      this.s.iterationPhases = {};
      this.s.iterationChanges = [];
      this.s.iterationOpen = true;
      this.fx.push({ type: "iteration.begin", iteration: this.s.iteration, task: null });
    }
    this.s.gateRunning = true;
    this.runPhase(this.phase(gate), 1);
  }

  gateFinished(passed: boolean, r: PhaseResult): void {
    const s = this.s;
    s.gateRunning = false;
    if (passed) return this.stop("complete", { code: "tasks_done", message: `all ${s.tasks!.length} tasks are done and the final gate "${this.m.tasks!.finalGate}" passed` });
    const reopen = s.tasks!.find((t) => t.id === s.lastDoneTask) ?? [...s.tasks!].reverse().find((t) => t.status === "done");
    if (reopen) {
      reopen.status = "pending";
      reopen.notes = [...reopen.notes, `[REOPENED] the final gate failed: ${r.message ?? r.error ?? "failed"}`];
      this.fx.push({ type: "task.update", task: reopen.id, status: "pending", attempts: reopen.attempts, reason: "the final gate failed" });
      this.fx.push({ type: "note", level: "warning", message: `the final gate failed; task ${reopen.id} is reopened` });
    } else {
      return this.stop("failed", { code: "transition", message: `the final gate "${this.m.tasks!.finalGate}" failed and there is no task to reopen` });
    }
    // the gate's failure counts toward the breakers like any phase
    const cf = s.limits.consecutiveFailures;
    if (cf !== null && cf > 0 && s.counters.consecutiveFailures >= cf) {
      return this.stop("stopped", { code: "consecutive_failures", message: `${s.counters.consecutiveFailures} phases failed in a row (consecutive_failures: ${cf})` });
    }
    if (this.checkBudgetAndDuration()) return;
    this.nextIteration();
  }

  // ── hooks and the end ──────────────────────────────────────────────────────

  hookEnv(hook: HookName, extra: Record<string, string> = {}): Record<string, string> {
    const s = this.s;
    return {
      PHASELOOP_RUN_ID: s.runId,
      PHASELOOP_PIPELINE: this.m.name,
      PHASELOOP_HOOK: hook,
      PHASELOOP_ITERATION: String(s.iteration),
      PHASELOOP_PHASE: s.awaiting?.kind === "phase" ? s.awaiting.phase : "",
      PHASELOOP_TASK: s.currentTask ?? "",
      PHASELOOP_WORKDIR: s.info.workdir,
      ...extra,
    };
  }

  /** Emit a hook; returns true when the machine now waits for it. */
  runHook(hook: HookName, blocking: boolean, then: "iteration" | "next-iteration", extra: Record<string, string> = {}): boolean {
    const h = this.m.hooks[hook];
    if (!h) return false;
    const ctx = this.ctx();
    const command = "shell" in h.command ? this.render(h.command.shell, ctx, true) : undefined;
    const argv = "argv" in h.command ? h.command.argv.map((a) => this.render(a, ctx)) : undefined;
    const bad = command && !command.ok ? command.error : argv?.find((a) => !a.ok && "error" in a);
    if (bad) {
      this.fx.push({ type: "note", level: "warning", message: `hook ${hook} could not be rendered` });
      return false;
    }
    const cmd = command && command.ok ? command.value : argv!.map((a) => (a.ok ? a.value : ""));
    this.fx.push({ type: "hook.run", hook, command: cmd, timeoutMs: h.timeoutMs, blocking, env: this.hookEnv(hook, extra) });
    if (blocking) {
      this.s.awaiting = { kind: "hook", hook, then };
      return true;
    }
    return false;
  }

  stop(outcome: Outcome | "stopped", reason: StopReason): void {
    const s = this.s;
    if (s.iterationOpen) {
      // record the iteration the run ends in; its outcome is the run's
      s.iterationOpen = false;
      const record: HistoryEntry = { iteration: s.iteration, phases: s.iterationPhases, changes: s.iterationChanges, task: s.currentTask };
      s.history.push(record);
      if (s.history.length > CAPS.history) s.history.splice(0, s.history.length - CAPS.history);
      this.fx.push({ type: "iteration.end", iteration: s.iteration, changes: s.iterationChanges, record });
    }
    s.status = "done";
    s.awaiting = null;
    s.outcome = { outcome, reason };
    const hook: HookName = outcome === "complete" ? "on_complete" : outcome === "failed" ? "on_failed" : "on_blocked";
    this.runHook(hook, false, "iteration", { PHASELOOP_OUTCOME: outcome, PHASELOOP_REASON: reason.message, PHASELOOP_STOP_CODE: reason.code });
    this.fx.push({ type: "stop", outcome, reason });
  }
}

/** Exit codes of the CLI contract. */
export function exitCodeFor(outcome: Outcome | "stopped" | "interrupted"): number {
  switch (outcome) {
    case "complete":
      return 0;
    case "failed":
      return 1;
    case "interrupted":
      return 130;
    default:
      return 3;
  }
}

export type { ErrorClass };
