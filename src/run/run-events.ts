/**
 * Run events: what a run reports as it goes. The runner appends them to
 * `.phaseloop/runs/RUN_ID/events.jsonl` (one JSON object per line) and hands
 * them to the reporter; `--reporter json` prints exactly these lines, and
 * `status` and `logs` read them back. docs/events.md documents the schema.
 *
 * Every event has `v` (schema version, 1), `seq` (1, 2, … within the run; a
 * resumed run continues the numbering), `at` (ISO 8601 time), `run` (the run id)
 * and `type`. Fields are snake_case like the pipeline format.
 */
import type { ErrorClass, JsonValue } from "../pipeline/spec.ts";
import type { PhaseStatus } from "../pipeline/context.ts";
import type { StartedVia } from "./run-info.ts";

export type RunOutcome = "complete" | "blocked" | "failed" | "stopped";

export interface StopReason {
  /** A stable name: max_iterations, no_progress, consecutive_failures, transition, stop_rule, tasks_done, … */
  code: string;
  /** What the user reads. */
  message: string;
}

interface Base {
  v: 1;
  seq: number;
  at: string;
  run: string;
  /** The task whose lane reported it, in a run with parallel lanes. */
  task?: string | null;
}

export type RunEvent = Base &
  (
    | {
        type: "run.started";
        pipeline: string;
        file: string;
        hash: string;
        workdir: string;
        params: Record<string, JsonValue>;
        max_iterations: number;
        phases: string[];
        version: string;
        /** `run --task`: the one task this run works. */
        task?: string;
        /** How the run was started (the command line, the MCP server, the page of `phaseloop ui`), as run.json records it. */
        started_via?: StartedVia;
      }
    | {
        type: "run.resumed";
        iteration: number;
        phase: string | null;
        /** The run's pipeline, workdir and iteration limit, so a view of the resumed run can say them (absent in logs of older versions). */
        pipeline?: string;
        workdir?: string;
        max_iterations?: number;
      }
    | { type: "iteration.started"; iteration: number; task: string | null }
    | {
        type: "phase.started";
        iteration: number;
        phase: string;
        attempt: number;
        kind: "agent" | "run" | "group" | "pipeline";
        /** Zero-padded sequence of this phase run: the artifacts are in phases/NNNN-PHASE/ ("" for a parallel group, whose members have their own). */
        dir: string;
        /** What runs: argv, or the shell command ([] for a parallel group; the child pipeline's file for a sub-pipeline). */
        command: string[] | string;
        /** Whether the phase runs in the OS sandbox. */
        sandbox?: boolean;
        /** Agent phases: the model (null: the agent's own default), the tier it came from, the session continued (null: fresh). */
        model?: string | null;
        model_tier?: string;
        continued_session?: string | null;
        /** A parallel group: its members (started at once) and its join. */
        members?: string[];
        join?: "all_success" | "one_success" | "all_done";
        /** A sub-pipeline: its run folder, relative to this run's (sub/NNNN-PHASE), with its own events.jsonl. */
        sub?: string;
      }
    | {
        type: "phase.output";
        phase: string;
        stream: "stdout" | "stderr";
        line: string;
        /** Lines left out before this one because the phase printed faster than they can be reported (the phase logs have them). */
        dropped?: number;
      }
    | { type: "phase.skipped"; iteration: number; phase: string; reason: string }
    | {
        type: "phase.finished";
        iteration: number;
        phase: string;
        attempt: number;
        status: PhaseStatus;
        error: ErrorClass | null;
        message: string | null;
        exit_code: number | null;
        duration_ms: number;
        tokens: number;
        cost_usd: number;
        output: Record<string, JsonValue>;
        changes: string[];
        /** A parallel group: the join that decided its status. */
        join?: "all_success" | "one_success" | "all_done";
      }
    | { type: "phase.retry"; phase: string; attempt: number; delay_ms: number; error: ErrorClass; message: string | null }
    | { type: "policy.violation"; phase: string; paths: string[]; action: "revert" | "fail" | "warn" }
    /** What the OS sandbox refused a phase: "write PATH", "read PATH", "connect HOST:PORT". */
    | { type: "sandbox.refused"; phase: string; refused: string[] }
    | { type: "hook.finished"; hook: string; ok: boolean; exit_code: number | null; duration_ms: number; message: string | null }
    | { type: "iteration.finished"; iteration: number; changes: string[]; task: string | null; /** false: the run measures no changes (nothing in the pipeline reads them) */ measured?: false }
    | { type: "task.updated"; task: string; status: "pending" | "done" | "blocked"; attempts: number; reason: string | null }
    | { type: "question.asked"; iteration: number; phase: string; question: string }
    | { type: "question.answered"; iteration: number; phase: string; question: string; answer: string }
    | { type: "note"; level: "info" | "warning"; message: string }
    | { type: "run.interrupted"; signal: string; iteration: number; phase: string | null }
    /** A lane started: its task's worktree and branch, from `base`. */
    | { type: "lane.started"; task: string; branch: string; worktree: string; base: string }
    /** A lane's loop ended (the task is merged or blocked after it). */
    | { type: "lane.finished"; task: string; outcome: RunOutcome; reason: StopReason; exit_code: number; iterations: number; tokens: number; cost_usd: number; elapsed_ms: number }
    | { type: "lane.interrupted"; task: string; signal: string; iteration: number; phase: string | null }
    /** A lane's task was merged into the target branch. */
    | { type: "lane.merged"; task: string; branch: string; into: string; commit: string; rebased: boolean }
    /** A lane's merge conflicted: it was rebased (its verification runs again) or it is blocked. */
    | { type: "lane.conflict"; task: string; branch: string; into: string; files: string[]; action: "rebased" | "blocked" }
    /** A lane ended without merging: its work is on its branch, kept. */
    | { type: "lane.blocked"; task: string; branch: string; status: "blocked" | "stopped"; reason: string; conflicts: string[] }
    | {
        type: "run.finished";
        outcome: RunOutcome;
        reason: StopReason;
        exit_code: number;
        iterations: number;
        tokens: number;
        cost_usd: number;
        elapsed_ms: number;
      }
  );

export type RunEventType = RunEvent["type"];

/** Events that are shown live but not written to events.jsonl (the phase logs hold them). */
export const TRANSIENT_EVENT_TYPES: ReadonlySet<RunEventType> = new Set(["phase.output"]);

/** A reporter shows a run as it goes. The runner knows nothing else of it. */
export interface Reporter {
  onEvent(event: RunEvent): void;
  /** Called once at the end; resolves when everything is flushed. */
  close(): Promise<void>;
}
