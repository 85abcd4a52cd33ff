/**
 * The compiled machine, the run snapshot, and the events and effects that
 * connect the pure core to the runtime. All plain, JSON-serialisable data.
 *
 * The runtime loop: `initialSnapshot`, then `transition(machine, snapshot,
 * { type: "start" })`; carry out the returned effects in order; the effects
 * that need an answer (`phase.run`, `wait`, a blocking `hook.run`,
 * `tasks.load`) are answered by the next event. Write the snapshot to disk
 * after every transition: that is the checkpoint `resume` continues from.
 */
import type { Expr, Template } from "../expr/index.ts";
import type { SourceFile } from "../pipeline/resolve-extends.ts";
import type { HistoryEntry, LastFailure, PhaseContext, TaskContext } from "../pipeline/context.ts";
import type { AgentSpec, ErrorClass, HookName, JsonValue, McpServerSpec, Outcome, OutputSpec, ParamSpec, SandboxMode, ToolSetSpec, TransientSpec } from "../pipeline/spec.ts";

// ── the machine ──────────────────────────────────────────────────────────────

export interface RetryPolicy {
  maxAttempts: number;
  on: ErrorClass[];
  intervalMs: number;
  backoff: number;
  maxDelayMs: number;
  jitter: boolean;
}

export interface CompiledRule {
  /** The condition's source text, for messages and drawings. */
  ifText?: string;
  if?: Expr;
  goto?: string;
  stop?: Outcome;
  reason?: Template;
  task?: "done" | "blocked";
  /** A short name for graphs. */
  label?: string;
}

export type PhaseKind = "agent" | "run" | "ask" | "group" | "pipeline";

/** When a parallel group has succeeded: every member, one member, or once all ended. */
export type JoinRule = "all_success" | "one_success" | "all_done";

export interface CompiledPhase {
  name: string;
  index: number;
  kind: PhaseKind;
  agent?: string;
  tools?: string;
  /** The MCP servers (names under the pipeline's `mcp`) attached to this phase's agent. */
  mcp?: string[];
  /** The prompt template (inline text or the prompt file's content). */
  prompt?: Template;
  /** Where the prompt came from: a file path, or "inline". */
  promptSource?: string;
  /** `run` as a shell string (interpolations shell-quoted) or an argv list. */
  run?: { shell: Template } | { argv: Template[] };
  /** An ask phase's question. */
  ask?: Template;
  /** A parallel group: its members (run at once) and its join. */
  members?: string[];
  join?: JoinRule;
  /** A member of this parallel group: it runs only with its group. */
  memberOf?: string;
  /** A sub-pipeline: the child file as written (resolved by the runtime as `extends` is), and the params it binds. */
  pipeline?: string;
  params?: Record<string, Template>;
  whenText?: string;
  when?: Expr;
  timeoutMs: number;
  idleTimeoutMs: number | null;
  retry: RetryPolicy;
  output: Record<string, OutputSpec>;
  outputSchema?: Record<string, unknown>;
  /** Output files by output name, as templates (cleared before the phase runs). */
  outputFiles: Record<string, Template>;
  /** `next` as rules; empty means fall through. */
  rules: CompiledRule[];
  env: Record<string, Template>;
  successExitCodes: number[];
  /** Per-phase breaker: stop after this many failures in a row. */
  consecutiveFailures: number | null;
  transient: TransientSpec[];
  /** Entries allowed per iteration, or null for no limit. */
  maxVisits: number | null;
  /** Taken instead of entering once more (goto or stop; no `if`). */
  exhausted: CompiledRule | null;
  /** The phase's own `sandbox` setting, when it has one. */
  sandbox?: SandboxMode;
  /** The phase's own `on_refusal` setting, when it has one. */
  onRefusal?: "fail" | "warn";
  /** A run phase's `network`: the hosts it may reach from the OS sandbox. */
  network?: string[];
  /** The model the agent runs with (the phase's, a tier resolved, else the agent's), and the tier named. */
  model?: string;
  modelTier?: string;
  /** The session an agent phase continues: its agent's latest, or the one a phase left. Absent: a fresh session. */
  session?: { continue: "agent" } | { continue: "phase"; phase: string };
}

/** A limit: a number, or a template resolved from params when the run starts. */
export type LimitSource = number | Template;

export interface CompiledHook {
  name: HookName;
  command: { shell: Template } | { argv: Template[] };
  timeoutMs: number;
  onFailure: "ignore" | "block";
  /** The hook's own `sandbox` setting, when it has one. */
  sandbox?: SandboxMode;
  /** The hosts the hook may reach from the OS sandbox. */
  network?: string[];
}

export interface CompiledTasks {
  source: { kind: "glob"; glob: string } | { kind: "json"; file: string; pointer: string; fields: Required<NonNullable<import("../pipeline/spec.ts").JsonTaskSource["fields"]>>; writeBack: boolean };
  maxAttempts: LimitSource;
  order: "priority" | "file";
  only?: Template;
  finalGate?: string;
  /** Lanes at once (default 1: one task at a time, in the workdir). */
  parallel?: number;
}

export interface Machine {
  name: string;
  description?: string;
  /** The pipeline file the machine was compiled from. */
  file: string;
  phases: CompiledPhase[];
  /** The loop head: entering it starts a new iteration. */
  head: string;
  limits: {
    maxIterations: LimitSource;
    maxDurationMs: number | null;
    noProgress: LimitSource | null;
    consecutiveFailures: LimitSource | null;
    budgetTokens: number | null;
    budgetCostUsd: number | null;
  };
  stopRules: { ifText: string; if: Expr; outcome: Outcome; reason?: Template }[];
  tasks: CompiledTasks | null;
  hooks: Partial<Record<HookName, CompiledHook>>;
  params: Record<string, ParamSpec>;
  agents: Record<string, AgentSpec>;
  tools: Record<string, ToolSetSpec>;
  /** The MCP servers phases may attach, by name. */
  mcp?: Record<string, McpServerSpec>;
  /** The pipeline's `sandbox` setting, when it has one. */
  sandbox?: SandboxMode;
  /** The pipeline's `on_refusal` setting, when it has one. */
  onRefusal?: "fail" | "warn";
  env: Record<string, Template>;
  /** Environment variables the pipeline's expressions and templates read (`env.NAME`); only these enter the snapshot. */
  envNames: string[];
  /** Whether anything reads measured changes (no_progress, `changes`, write scopes): the runtime may skip measuring otherwise. */
  measuresChanges: boolean;
  /** The sub-pipelines of `pipeline:` phases, by phase, compiled with this machine (compile-loaded.ts). */
  children?: Record<string, CompiledChild>;
}

/** A sub-pipeline compiled with its parent: the child's machine and the files it was read from. */
export interface CompiledChild {
  /** The child file, resolved as the parent's phase names it. */
  file: string;
  machine: Machine;
  /** What the child was read from: its run.json's hash and files come from it. */
  source: PipelineSources;
}

/** The texts a pipeline was read from: the file, what it extends or includes, its prompts, and its sub-pipelines' in turn. */
export interface PipelineSources {
  file: string;
  text: string;
  promptFiles: Record<string, string | undefined>;
  files?: SourceFile[];
  children?: Record<string, { file: string; loaded: PipelineSources }>;
}

// ── the snapshot ─────────────────────────────────────────────────────────────

export type RunStatus = "idle" | "running" | "waiting" | "done" | "interrupted";

export type StopCode =
  | "transition"
  | "stop_rule"
  | "max_iterations"
  | "max_duration"
  | "budget_tokens"
  | "budget_cost"
  | "no_progress"
  | "consecutive_failures"
  | "phase_failures"
  | "tasks_done"
  | "tasks_blocked"
  | "hook_blocked"
  | "unhandled_failure"
  | "max_visits";

export interface StopReason {
  code: StopCode;
  message: string;
}

/** What the machine is waiting for. */
export type Awaiting =
  | { kind: "phase"; phase: string; attempt: number; seq: number }
  | { kind: "retry"; phase: string; attempt: number; delayMs: number }
  | { kind: "hook"; hook: HookName; then: "iteration" | "next-iteration" }
  | { kind: "tasks" }
  /** A parallel group's members still running (by name: the attempt, its phases/ seq, and the delay before a retry). */
  | { kind: "group"; group: string; running: Record<string, { attempt: number; seq: number; delayMs?: number }> }
  /** An ask phase's question, asked and not yet answered. */
  | { kind: "answer"; phase: string; question: string; seq: number; askedAt?: number }
  | null;

export interface TaskState extends TaskContext {
  /** Position in the source, for ordering and write-back. */
  order: number;
  reason: string | null;
  /** Why the current attempt did not finish the task (a rule's `reason`), noted when the attempt ends. */
  rejection?: string | null;
}

export interface Snapshot {
  v: 1;
  runId: string;
  status: RunStatus;
  params: Record<string, JsonValue>;
  limits: {
    maxIterations: number;
    maxDurationMs: number | null;
    noProgress: number | null;
    consecutiveFailures: number | null;
    budgetTokens: number | null;
    budgetCostUsd: number | null;
    taskAttempts: number;
  };
  iteration: number;
  awaiting: Awaiting;
  /** Phase runs so far (numbering phases/NNNN-PHASE/). */
  phaseSeq: number;
  results: Record<string, PhaseContext>;
  /** Phases of the current iteration, for its history entry. */
  iterationPhases: HistoryEntry["phases"];
  iterationChanges: string[];
  /**
   * Failures standing in the current iteration: an agent phase (or a
   * sub-pipeline, or a group whose join failed) that failed, or any phase
   * whose required output is missing or invalid, when the rule that took
   * control from it does not test its `status` or `error`. While one stands
   * the run cannot complete. Cleared when the phase next succeeds or its
   * failure is handled, and when a new iteration begins (absent in older checkpoints).
   */
  unhandled?: { phase: string; error: string; message: string }[];
  /** Questions of ask phases and their answers (null until answered), the latest last (capped; absent in older checkpoints). */
  questions?: { phase: string; iteration: number; question: string; answer: string | null }[];
  /** Entries into each phase this iteration, for `max_visits` (absent in older checkpoints). */
  visits?: Record<string, number>;
  history: HistoryEntry[];
  /** Agent sessions this run left, to continue: by the phase that ran last in each, and each agent's latest (absent in older checkpoints). */
  sessions?: { phases: Record<string, string>; agents: Record<string, string> };
  /** Every file changed so far, with the iteration that last changed it (capped; absent in older checkpoints). */
  filesChanged?: Record<string, number>;
  lastFailure: LastFailure | null;
  counters: {
    consecutiveFailures: number;
    noProgress: number;
    phaseFailures: Record<string, number>;
    phasesRun: number;
    retries: number;
  };
  tokens: number;
  costUsd: number;
  elapsedMs: number;
  lastAt: number | null;
  tasks: TaskState[] | null;
  currentTask: string | null;
  /** The task completed last (reopened when the final gate fails). */
  lastDoneTask: string | null;
  gateRunning: boolean;
  /** An iteration has begun and not yet ended. */
  iterationOpen: boolean;
  outcome: { outcome: Outcome | "stopped"; reason: StopReason } | null;
  /** A run whose tasks run in parallel lanes (absent otherwise). */
  lanes?: LanesState;
  /** Run-level facts templates may use. */
  info: { pipeline: { name: string; file: string; dir: string }; workdir: string; env: Record<string, string> };
}

/** One task worked on in its own git worktree, on its own branch. */
export interface LaneState {
  task: string;
  /** phaseloop/RUN_ID/TASK */
  branch: string;
  /** The worktree (absolute); null once it is removed. */
  worktree: string | null;
  /** The commit the lane started from: its target when its dependencies were merged. */
  base: string;
  /** running (its loop, or its merge) · merged · blocked (its work kept on its branch) · stopped (by a run-wide limit, its work on its branch) */
  status: "running" | "merging" | "merged" | "blocked" | "stopped";
  /** Iterations of its loop so far, and the phase running now (for views). */
  iteration: number;
  phase: string | null;
  reason: string | null;
  /** Files that conflicted with the target when it was merged. */
  conflicts: string[];
  /** Rebased onto the target after a conflict, and its verification run again (at most once). */
  rebased: boolean;
  /** The phase whose result finished the task: it runs again after a rebase. */
  verify: string | null;
  tokens: number;
  cost_usd: number;
}

export interface LanesState {
  /** Lanes at once. */
  parallel: number;
  /** The branch done tasks are merged into. */
  into: string;
  /** Where the target branch is checked out: the workdir, or a worktree of phaseloop's own for `--into` another branch. */
  targetDir: string;
  lanes: LaneState[];
}

// ── events: what the runtime tells the machine ───────────────────────────────

export interface PhaseResult {
  /** null when the process did not end with a code (killed, not started). */
  exit_code: number | null;
  /** Extracted outputs by name. */
  output: Record<string, JsonValue>;
  /** The agent's final message, or a command's stdout. */
  text: string;
  /** null when the phase succeeded (process ended well, outputs valid). */
  error: ErrorClass | null;
  message?: string | null;
  /** Tail of stdout and stderr, for `last_failure`. */
  output_tail: string;
  tokens: number;
  cost_usd: number;
  duration_ms: number;
  /** Files changed since the iteration started (measured). */
  changes: string[];
  /** A random number in [0, 1) drawn by the runtime, used for retry jitter. */
  jitter: number;
  /** The command a command phase ran, as rendered. */
  command?: string | null;
  /** An ask phase: the answer. */
  answer?: string | null;
  /** Shell commands an agent ran, where its events say. */
  commands?: string[];
  /** Tool calls the agent was refused. */
  denied?: string[];
  /** The agent's session, when it reported one (continued by later phases that ask for it). */
  session_id?: string | null;
}

export interface TaskItem {
  id: string;
  title: string;
  body: string;
  priority: number | null;
  depends_on: string[];
  done: boolean;
  blocked: boolean;
  attempts: number;
  notes: string[];
}

export type MachineEvent =
  | { type: "start"; at: number }
  | { type: "tasks.loaded"; at: number; tasks: TaskItem[] }
  | { type: "phase.finished"; at: number; phase: string; attempt: number; result: PhaseResult }
  | { type: "retry.fired"; at: number }
  | { type: "hook.finished"; at: number; hook: HookName; ok: boolean; message?: string | null }
  /** A person's answer to the question of an ask phase; null when the wait timed out. */
  | { type: "answer.given"; at: number; phase: string; answer: string | null }
  | { type: "interrupted"; at: number; signal: string }
  | { type: "resumed"; at: number };

// ── effects: what the machine asks the runtime to do ─────────────────────────

export type Effect =
  /** Take the change baseline for a new iteration; run before_iteration work. */
  | { type: "iteration.begin"; iteration: number; task: string | null }
  /** Run a phase; answer with phase.finished. */
  | {
      type: "phase.run";
      phase: string;
      kind: "agent" | "run" | "pipeline";
      iteration: number;
      attempt: number;
      /** phases/NNNN-PHASE/ */
      seq: number;
      /** The rendered prompt (agent phases). */
      prompt?: string;
      /** The prompt calls file(): the runner renders it (from `context`), reading the files. */
      promptReadsFiles?: boolean;
      /** The rendered command: a shell string (values quoted) or argv. */
      command?: string | string[];
      env: Record<string, string>;
      /** Rendered output file paths by output name (cleared before the run). */
      outputFiles: Record<string, string>;
      /** The context, for rendering agent commands and templates the runtime owns. */
      context: Record<string, JsonValue>;
      /** A sub-pipeline: the child file as written, and its params rendered in this pipeline's context. */
      pipeline?: string;
      params?: Record<string, string>;
      /** The agent session this phase continues, when it continues one that exists. */
      session?: string;
      /** A member of a parallel group: its group, the other members' write globs (their changes are theirs), and the wait before a retry. */
      group?: string;
      groupWrite?: string[];
      delayMs?: number;
    }
  /** A phase whose `when` did not hold. */
  | { type: "phase.skipped"; phase: string; iteration: number; reason: string }
  /** Ask a person; answer with answer.given (now, or after a resume). */
  | { type: "question.ask"; phase: string; iteration: number; seq: number; question: string; timeoutMs: number }
  /** A parallel group was entered: its members start at once. */
  | { type: "group.started"; group: string; iteration: number; join: JoinRule; members: string[] }
  /** A parallel group's members have all ended; its join gave it this status. */
  | { type: "group.finished"; group: string; iteration: number; join: JoinRule; status: "succeeded" | "failed"; succeeded: string[]; failed: string[]; skipped: string[]; message: string | null; duration_ms: number }
  /** A phase whose `max_visits` was used up: its `exhausted` rule is taken instead. */
  | { type: "phase.exhausted"; phase: string; iteration: number; visits: number; reason: string; goto?: string; stop?: Outcome }
  /** A phase that could not start (a template did not render). It is recorded as failed. */
  | { type: "phase.error"; phase: string; iteration: number; message: string }
  /** Wait, then answer with retry.fired. */
  | { type: "wait"; ms: number; phase: string; attempt: number; error: ErrorClass; message: string | null }
  /** Run a hook; when blocking, answer with hook.finished. */
  | { type: "hook.run"; hook: HookName; command: string | string[]; timeoutMs: number; blocking: boolean; env: Record<string, string> }
  /** Read the task source; answer with tasks.loaded. */
  | { type: "tasks.load" }
  | { type: "task.update"; task: string; status: "pending" | "done" | "blocked"; attempts: number; reason: string | null }
  | { type: "iteration.end"; iteration: number; changes: string[]; record: HistoryEntry }
  | { type: "note"; level: "info" | "warning"; message: string }
  | { type: "stop"; outcome: Outcome | "stopped"; reason: StopReason };

export interface TransitionResult {
  snapshot: Snapshot;
  effects: Effect[];
}
