/**
 * `resume --force` with a checkpoint that cannot be used: the checkpoint is
 * rebuilt from the event log. The machine runs again from the start, and each
 * effect that needs an answer is answered from the log instead of carried
 * out (a phase by its `phase.finished` event, a hook by its `hook.finished`,
 * a question by its `question.answered`), until the log has no answer: from
 * there the run goes on for real. A phase entered several times in one
 * iteration is answered by its logged runs in order, so visit counts come back
 * as they were; a parallel group's members are fed in the order they ended,
 * and those the log did not see end are left running. What the
 * log does not keep (an agent's full final message) is read from the phase's
 * stdout.log where there is one, else left empty.
 */
import { dirname, join, resolve } from "node:path";
import { isoNow, type Host, type HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { nodeHost } from "../host/node-host.ts";
import { initialSnapshot, transition } from "../machine/transition.ts";
import type { Machine, MachineEvent, PhaseResult, Snapshot, TaskItem } from "../machine/types.ts";
import type { JsonValue } from "../pipeline/spec.ts";
import { checkEvent, checkRunInfo } from "./check-run-state.ts";
import type { Checkpoint, IterationRecord } from "./checkpoint.ts";
import { loadTasks } from "./load-tasks.ts";
import type { RunEvent } from "./run-events.ts";
import { STARTED_VIA, type RunInfo } from "./run-info.ts";

type Logged = RunEvent & Record<string, unknown>;

/** The events of events.jsonl that can be read, in order (others skipped). */
export function readLoggedEvents(dir: string, files: HostFiles = nodeFiles): Logged[] {
  let text: string;
  try {
    text = files.readText(join(dir, "events.jsonl"));
  } catch {
    return [];
  }
  const out: Logged[] = [];
  let last = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const value = JSON.parse(line) as Logged;
      if (checkEvent(value, "") === undefined && value.seq > last) {
        out.push(value);
        last = value.seq;
      }
    } catch {
      // a torn or damaged line: skipped
    }
  }
  return out;
}

/** run.json as the log's `run.started` tells it, for a run.json that cannot be used. */
export function runInfoFromLog(runId: string, events: Logged[]): RunInfo | undefined {
  const started = events.find((e) => e.type === "run.started");
  if (!started || started.type !== "run.started") return undefined;
  const info: RunInfo = {
    run_id: runId,
    pipeline: started.pipeline,
    file: started.file,
    hash: started.hash,
    version: started.version,
    params: started.params,
    workdir: started.workdir,
    started_at: started.at,
    agents: {},
    max_iterations: started.max_iterations,
    ...(started.task !== undefined ? { task: started.task } : {}),
    ...(started.started_via !== undefined && STARTED_VIA.includes(started.started_via) ? { started_via: started.started_via } : {}),
  };
  return checkRunInfo(info, "") === undefined ? info : undefined;
}

export interface Rebuilt {
  checkpoint: Checkpoint;
  /** Phase runs of the log the rebuilt machine did not ask for (the replay parted from the log there). */
  unmatched: number;
}

function pad(n: number): string {
  return String(n).padStart(4, "0");
}

function readStdout(files: HostFiles, dir: string, seq: number, phase: string): string {
  try {
    return files.readText(join(dir, "phases", `${pad(seq)}-${phase}`, "stdout.log")).slice(-100_000);
  } catch {
    return "";
  }
}

/** A phase's result as its phase.finished event logged it. */
function loggedResult(machine: Machine, done: Extract<Logged, { type: "phase.finished" }>, stdout: string): PhaseResult {
  const phase = machine.phases.find((p) => p.name === done.phase);
  return {
    exit_code: done.exit_code,
    output: done.output as Record<string, JsonValue>,
    text: phase?.kind === "run" ? stdout : "",
    error: done.error,
    message: done.message,
    output_tail: (done.message ?? stdout.slice(-3000)).trim(),
    tokens: done.tokens,
    cost_usd: done.cost_usd,
    duration_ms: done.duration_ms,
    changes: done.changes,
    jitter: 0.5,
  };
}

export async function rebuildCheckpoint(machine: Machine, info: RunInfo, events: Logged[], dir: string, env: Record<string, string>, host: Host = nodeHost): Promise<Rebuilt> {
  const file = resolve(info.file);
  let snapshot: Snapshot = initialSnapshot(machine, { runId: info.run_id, params: info.params, env, pipeline: { name: machine.name, file, dir: dirname(file) }, workdir: info.workdir });
  snapshot.limits.maxIterations = info.max_iterations;
  // a phase entered several times in an iteration (max_visits) ran as often: its runs are answered in the order they were logged
  const finished = new Map<string, Logged[]>();
  const hooks = new Map<string, Logged[]>();
  const ended = new Map<number, Logged>();
  const answers = new Map<string, Logged[]>();
  for (const e of events) {
    // a parallel group's own phase.finished (it has its join) is the machine's to decide again
    if (e.type === "phase.finished" && e.join === undefined) {
      const key = `${e.iteration}/${e.phase}/${e.attempt}`;
      finished.set(key, [...(finished.get(key) ?? []), e]);
    }
    if (e.type === "hook.finished") hooks.set(e.hook, [...(hooks.get(e.hook) ?? []), e]);
    if (e.type === "iteration.finished") ended.set(e.iteration, e);
    if (e.type === "question.answered") answers.set(`${e.iteration}/${e.phase}`, [...(answers.get(`${e.iteration}/${e.phase}`) ?? []), e]);
  }
  // the records of iterations the log saw end: appended by resume if iterations.jsonl lacks them
  const records: IterationRecord[] = [];
  const at = (e: Logged | undefined): number => {
    const t = e ? Date.parse(e.at) : NaN;
    return Number.isFinite(t) ? t : snapshot.lastAt ?? 0;
  };
  const started = events.find((e) => e.type === "run.started");
  // answers waiting to be fed, in the order the log has them: members of a parallel group end in any order
  const queue: { seq: number; event: MachineEvent }[] = [{ seq: 0, event: { type: "start", at: at(started) } }];
  while (queue.length > 0) {
    queue.sort((a, b) => a.seq - b.seq);
    const r = transition(machine, snapshot, queue.shift()!.event);
    snapshot = r.snapshot;
    for (const fx of r.effects) {
      if (fx.type === "iteration.end" && ended.has(fx.iteration)) records.push({ ...fx.record, at: ended.get(fx.iteration)!.at, tokens: snapshot.tokens, cost_usd: snapshot.costUsd });
      if (fx.type === "phase.run") {
        const key = `${fx.iteration}/${fx.phase}/${fx.attempt}`;
        const done = finished.get(key)?.shift();
        // a member the log did not see end stays running (the resumed run starts it); the others are fed
        if (!done || done.type !== "phase.finished") {
          if (fx.group !== undefined) continue;
          break;
        }
        queue.push({ seq: done.seq, event: { type: "phase.finished", at: at(done), phase: fx.phase, attempt: fx.attempt, result: loggedResult(machine, done, readStdout(host.files, dir, fx.seq, fx.phase)) } });
      } else if (fx.type === "wait") {
        queue.push({ seq: 0, event: { type: "retry.fired", at: (snapshot.lastAt ?? 0) + fx.ms } });
      } else if (fx.type === "question.ask") {
        const done = answers.get(`${fx.iteration}/${fx.phase}`)?.shift();
        if (!done || done.type !== "question.answered") break;
        queue.push({ seq: done.seq, event: { type: "answer.given", at: at(done), phase: fx.phase, answer: done.answer } });
      } else if (fx.type === "hook.run" && fx.blocking) {
        const done = hooks.get(fx.hook)?.shift();
        if (!done || done.type !== "hook.finished") break;
        queue.push({ seq: 0, event: { type: "hook.finished", at: at(done), hook: fx.hook, ok: done.ok, message: done.message } });
      } else if (fx.type === "tasks.load" && machine.tasks) {
        let tasks: TaskItem[] = [];
        try {
          tasks = await loadTasks(machine.tasks, info.workdir);
        } catch {
          // the resumed run loads them again, and says what is wrong
          break;
        }
        queue.push({ seq: 0, event: { type: "tasks.loaded", at: snapshot.lastAt ?? 0, tasks } });
      }
    }
  }
  const last = events[events.length - 1];
  const unmatched = [...finished.values()].reduce((n, left) => n + left.length, 0);
  const checkpoint: Checkpoint = { snapshot, seq: last?.seq ?? 0, pending: [], updated_at: isoNow(host.clock) };
  if (records.length > 0) checkpoint.pending_iterations = records;
  return { checkpoint, unmatched };
}
