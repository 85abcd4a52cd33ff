/** The snapshot a run starts from, with its limits resolved against the params. */
import { renderTemplate, type JsonValue } from "../expr/index.ts";
import type { LimitSource, Machine, Snapshot } from "./types.ts";

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
    visits: {},
    history: [],
    filesChanged: {},
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
