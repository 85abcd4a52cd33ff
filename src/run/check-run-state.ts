/**
 * What the files of a run directory must hold to be used: run.json, the
 * checkpoint in state.json, event lines, iteration lines and the iteration
 * baseline. Each check returns the first problem as `path: what is wrong`, or
 * undefined. Pure: reading the files is read-run-state.ts's job.
 */
import type { Machine } from "../machine/types.ts";
import type { ParamSpec } from "../pipeline/spec.ts";
import { arrayOf, bool, count, json, literal, nullable, num, obj, optional, recordOf, str, tagged, type Check } from "../runtime/check-shape.ts";

export const checkRunInfo: Check = obj({
  run_id: str,
  pipeline: str,
  file: str,
  hash: str,
  version: str,
  params: recordOf(json),
  workdir: str,
  started_at: str,
  agents: optional(recordOf(str)),
  max_iterations: count,
  files: optional(arrayOf(obj({ path: str, role: str, sha256: str, package: optional(str), version: optional(str) }))),
  task: optional(str),
  started_via: optional(literal("cli", "mcp", "ui")),
});

const stringList = arrayOf(str);
const phaseStatus = literal("pending", "succeeded", "failed", "skipped");

const phaseContext = obj({
  status: phaseStatus,
  exit_code: nullable(num),
  output: recordOf(json),
  text: str,
  error: nullable(str),
  attempts: count,
  duration_ms: num,
  tokens: num,
  cost_usd: num,
  iteration: count,
});

const historyEntry = obj({
  iteration: count,
  phases: recordOf(obj({ status: phaseStatus, error: nullable(str), exit_code: nullable(num), output: recordOf(json), text_tail: str, message: optional(nullable(str)), command: optional(nullable(str)), commands: optional(stringList), denied: optional(stringList) })),
  changes: stringList,
  task: nullable(str),
});

const taskState = obj({
  id: str,
  title: str,
  body: str,
  status: literal("pending", "done", "blocked"),
  attempts: count,
  priority: nullable(num),
  depends_on: stringList,
  notes: stringList,
  order: num,
  reason: nullable(str),
  rejection: optional(nullable(str)),
});

const awaiting = nullable(
  tagged("kind", {
    phase: obj({ phase: str, attempt: count, seq: count }),
    retry: obj({ phase: str, attempt: count, delayMs: num }),
    hook: obj({ hook: str, then: literal("iteration", "next-iteration") }),
    tasks: obj({}),
    answer: obj({ phase: str, question: str, seq: count, askedAt: optional(num) }),
    group: obj({ group: str, running: recordOf(obj({ attempt: count, seq: count, delayMs: optional(num) })) }),
  }),
);

const snapshotShape = obj({
  v: literal(1),
  runId: str,
  status: literal("idle", "running", "waiting", "done", "interrupted"),
  params: recordOf(json),
  limits: obj({
    maxIterations: count,
    maxDurationMs: nullable(num),
    noProgress: nullable(num),
    consecutiveFailures: nullable(num),
    budgetTokens: nullable(num),
    budgetCostUsd: nullable(num),
    taskAttempts: num,
  }),
  iteration: count,
  awaiting,
  phaseSeq: count,
  results: recordOf(phaseContext),
  iterationPhases: recordOf(obj({ status: phaseStatus, error: nullable(str), exit_code: nullable(num), output: recordOf(json), text_tail: str })),
  iterationChanges: stringList,
  history: arrayOf(historyEntry),
  filesChanged: optional(recordOf(count)),
  visits: optional(recordOf(count)),
  questions: optional(arrayOf(obj({ phase: str, iteration: count, question: str, answer: nullable(str) }))),
  lastFailure: nullable(obj({ phase: str, iteration: count, error: str, exit_code: nullable(num), output_tail: str, message: str })),
  counters: obj({ consecutiveFailures: count, noProgress: count, phaseFailures: recordOf(count), phasesRun: count, retries: count }),
  tokens: num,
  costUsd: num,
  elapsedMs: num,
  lastAt: nullable(num),
  tasks: nullable(arrayOf(taskState)),
  currentTask: nullable(str),
  lastDoneTask: nullable(str),
  gateRunning: bool,
  iterationOpen: bool,
  outcome: nullable(obj({ outcome: literal("complete", "blocked", "failed", "stopped"), reason: obj({ code: str, message: str }) })),
  info: obj({ pipeline: obj({ name: str, file: str, dir: str }), workdir: str, env: recordOf(str) }),
});

/** The fields every logged event has, and those of each known type (as run-events.ts declares them). */
const eventBase = { seq: count, type: str, at: str, run: str };
const command: Check = (v, p) => (typeof v === "string" ? undefined : stringList(v, p));
const eventFields: Record<string, Record<string, Check>> = {
  "run.started": { pipeline: str, file: str, hash: str, workdir: str, params: recordOf(json), max_iterations: count, phases: stringList, version: str, task: optional(str), started_via: optional(literal("cli", "mcp", "ui")) },
  "run.resumed": { iteration: count, phase: nullable(str) },
  "iteration.started": { iteration: count, task: nullable(str) },
  "phase.started": { iteration: count, phase: str, attempt: count, kind: str, dir: str, command },
  "phase.output": { phase: str, stream: literal("stdout", "stderr"), line: str },
  "phase.skipped": { iteration: count, phase: str, reason: str },
  "phase.finished": {
    iteration: count,
    phase: str,
    attempt: count,
    status: phaseStatus,
    error: nullable(str),
    message: nullable(str),
    exit_code: nullable(num),
    duration_ms: num,
    tokens: num,
    cost_usd: num,
    output: recordOf(json),
    changes: stringList,
  },
  "phase.retry": { phase: str, attempt: count, delay_ms: num, error: str, message: nullable(str) },
  "policy.violation": { phase: str, paths: stringList, action: literal("revert", "fail", "warn") },
  "hook.finished": { hook: str, ok: bool, exit_code: nullable(num), duration_ms: num, message: nullable(str) },
  "iteration.finished": { iteration: count, changes: stringList, task: nullable(str), measured: optional(literal(false)) },
  "task.updated": { task: str, status: literal("pending", "done", "blocked"), attempts: count, reason: nullable(str) },
  "question.asked": { iteration: count, phase: str, question: str },
  "question.answered": { iteration: count, phase: str, question: str, answer: str },
  note: { level: literal("info", "warning"), message: str },
  "run.interrupted": { signal: str, iteration: count, phase: nullable(str) },
  "run.finished": {
    outcome: literal("complete", "blocked", "failed", "stopped"),
    reason: obj({ code: str, message: str }),
    exit_code: count,
    iterations: count,
    tokens: num,
    cost_usd: num,
    elapsed_ms: num,
  },
};
const eventChecks: Record<string, Check> = Object.fromEntries(Object.entries(eventFields).map(([type, fields]) => [type, obj({ ...eventBase, ...fields })]));
const unknownEvent = obj(eventBase);

/** One logged event: the common fields, and the fields of its type (unknown types are kept, for newer logs). */
export const checkEvent: Check = (v, p) => {
  const type = v !== null && typeof v === "object" ? (v as { type?: unknown }).type : undefined;
  return (typeof type === "string" && Object.hasOwn(eventChecks, type) ? eventChecks[type]! : unknownEvent)(v, p);
};

/** A line of iterations.jsonl. */
export const checkIterationRecord: Check = obj({ iteration: count, phases: optional(recordOf(json)), changes: optional(stringList) });

/** baseline.json: the measure of an open iteration's start. */
export const checkSavedBaseline: Check = obj({
  iteration: count,
  baseline: tagged("kind", {
    git: obj({ index: str, root: str, prefix: str, gitDir: str, commonDir: str, overlay: optional(recordOf(str)) }),
    snapshot: obj({ files: recordOf(str) }),
  }),
});

export const checkCheckpointShape: Check = obj({
  snapshot: snapshotShape,
  seq: count,
  pending: arrayOf(checkEvent),
  pending_iterations: optional(arrayOf(checkIterationRecord)),
  updated_at: optional(str),
});

/**
 * A checkpoint this machine can continue: the shape, then what the names in
 * it refer to (the pipeline may have changed since, under --force).
 */
export function checkCheckpoint(value: unknown, machine: Machine): string | undefined {
  const shape = checkCheckpointShape(value, "");
  if (shape) return shape;
  const cp = value as { snapshot: import("../machine/types.ts").Snapshot; seq: number; pending: { seq: number }[] };
  const s = cp.snapshot;
  const phases = new Set(machine.phases.map((p) => p.name));
  const a = s.awaiting;
  if ((a?.kind === "phase" || a?.kind === "retry") && !phases.has(a.phase)) return `snapshot.awaiting.phase: names no phase of the pipeline ("${a.phase}")`;
  if ((a?.kind === "phase" || a?.kind === "retry") && a.attempt < 1) return "snapshot.awaiting.attempt: expected a whole number of at least 1";
  if (a?.kind === "hook" && !(a.hook in machine.hooks)) return `snapshot.awaiting.hook: names no hook of the pipeline ("${a.hook}")`;
  if (a?.kind === "group") {
    const group = machine.phases.find((p) => p.name === a.group);
    if (group?.kind !== "group") return `snapshot.awaiting.group: names no parallel group of the pipeline ("${a.group}")`;
    const stray = Object.keys(a.running).find((m) => !group.members?.includes(m));
    if (stray !== undefined) return `snapshot.awaiting.running: "${stray}" is not a member of group "${a.group}"`;
  }
  if (a?.kind === "answer" && machine.phases.find((p) => p.name === a.phase)?.kind !== "ask") return `snapshot.awaiting.phase: names no ask phase of the pipeline ("${a.phase}")`;
  if (a?.kind === "tasks" && !machine.tasks) return "snapshot.awaiting: waits for tasks, but the pipeline has no task source";
  for (const [name, spec] of Object.entries(machine.params)) {
    const problem = checkParam(s.params[name], spec);
    if (problem) return `snapshot.params.${name}: ${problem}`;
  }
  if (machine.tasks && s.tasks === null && s.iteration > 0) return "snapshot.tasks: null after the first iteration of a pipeline with tasks";
  if (s.status === "done" && s.outcome === null) return "snapshot.outcome: null in a finished run";
  for (let i = 1; i < cp.pending.length; i++) {
    if (cp.pending[i]!.seq <= cp.pending[i - 1]!.seq) return `pending[${i}].seq: ${cp.pending[i]!.seq} does not follow ${cp.pending[i - 1]!.seq}`;
  }
  const last = cp.pending[cp.pending.length - 1];
  if (last && last.seq > cp.seq) return `seq: ${cp.seq} is before the pending event ${last.seq}`;
  return undefined;
}

/** A param's value as the run resolved it: present, of its declared type, in its enum. */
function checkParam(value: unknown, spec: ParamSpec): string | undefined {
  if (value === undefined) return "missing, but the pipeline declares it";
  const fits = spec.type === "string" ? typeof value === "string" : spec.type === "boolean" ? typeof value === "boolean" : spec.type === "integer" ? Number.isInteger(value) : typeof value === "number" && Number.isFinite(value);
  if (!fits) return `expected ${spec.type === "integer" ? "an integer" : `a ${spec.type}`}, found ${JSON.stringify(value)}`;
  // an optional param left out holds its type's empty value, which the enum need not list
  const leftOut = spec.required === false && (value === "" || value === 0 || value === false);
  if (spec.enum && !leftOut && !spec.enum.includes(value as string | number)) return `${JSON.stringify(value)} is not one of ${spec.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  return undefined;
}
