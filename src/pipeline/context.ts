/**
 * The context that expressions (`if`, `when`) and templates (`{{ }}`) see.
 * The validator checks names against this shape (context-scope.ts); the state
 * machine builds the values (the same shape) from the run snapshot.
 */
import type { ErrorClass, JsonValue } from "./spec.ts";

export type PhaseStatus = "pending" | "succeeded" | "failed" | "skipped";

/** The latest result of one phase, from this iteration or an earlier one. */
export interface PhaseContext {
  status: PhaseStatus;
  exit_code: number | null;
  /** Extracted outputs by name (`output.status`, `output.review.pending`). */
  output: Record<string, JsonValue>;
  /** The agent's final message (or a command's stdout), capped. */
  text: string;
  /** The error class when failed, else null. */
  error: ErrorClass | null;
  attempts: number;
  duration_ms: number;
  tokens: number;
  cost_usd: number;
  /** The iteration the result comes from. */
  iteration: number;
  /** Why it failed, when it did (absent in older checkpoints). */
  message?: string | null;
  /** Tool calls the agent was refused (absent in older checkpoints). */
  denied?: string[];
  /** An ask phase: the person's answer (null until answered). */
  answer?: string | null;
}

/** One phase of an earlier iteration, as it ended. */
export interface HistoryPhase {
  status: PhaseStatus;
  error: ErrorClass | null;
  exit_code: number | null;
  output: Record<string, JsonValue>;
  text_tail: string;
  /** Why it failed, when it did. */
  message?: string | null;
  /** The command a command phase ran, as rendered. */
  command?: string | null;
  /** Shell commands an agent ran, where its events say (Claude, Codex). */
  commands?: string[];
  /** Tool calls the agent was refused (its tool set, or the agent's own permissions). */
  denied?: string[];
}

export interface HistoryEntry {
  iteration: number;
  phases: Record<string, HistoryPhase>;
  changes: string[];
  task: string | null;
}

export interface LastFailure {
  phase: string;
  iteration: number;
  error: ErrorClass;
  exit_code: number | null;
  /** The tail of the failed phase's output (stdout and stderr), capped. */
  output_tail: string;
  message: string;
}

export interface TaskContext {
  id: string;
  title: string;
  body: string;
  status: "pending" | "done" | "blocked";
  attempts: number;
  priority: number | null;
  depends_on: string[];
  notes: string[];
}

export interface RunContext {
  /** 1-based; entering the loop head starts the next iteration. */
  iteration: number;
  params: Record<string, JsonValue>;
  phases: Record<string, PhaseContext>;
  /** The current phase's own result (in `next` rules, `reason`, and output templates). */
  status: PhaseStatus;
  exit_code: number | null;
  output: Record<string, JsonValue>;
  text: string;
  error: ErrorClass | null;
  attempts: number;
  /** The current ask phase's answer (null elsewhere). */
  answer: string | null;
  /** Files changed so far this iteration (measured, relative paths). */
  changes: string[];
  /** Earlier iterations, oldest first, capped. */
  history: HistoryEntry[];
  /** Every file changed so far in the run, with the iteration that last changed it. */
  files: Record<string, number>;
  last_failure: LastFailure | null;
  /** `artifacts`: the run's artifacts folder (absolute), which every phase may write. */
  run: { id: string; tokens: number; cost_usd: number; elapsed_ms: number; artifacts: string };
  task: TaskContext | null;
  tasks: { total: number; done: number; blocked: number; pending: number; items: TaskContext[] };
  env: Record<string, string>;
  /** The pipeline file: its name, path and directory (to reach scripts shipped beside a recipe). */
  pipeline: { name: string; file: string; dir: string };
  /** The run's working directory (absolute). */
  workdir: string;
}
