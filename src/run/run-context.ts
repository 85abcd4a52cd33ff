/**
 * What an effect gets to work with. Each kind of effect (a phase, a hook, the
 * task file) is a function of its effect and this context; it reports run
 * events through `emit` and answers with the machine event, if any.
 */
import type { Host } from "../host/host.ts";
import type { Machine, Snapshot } from "../machine/types.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import type { ChangeTracker } from "../changes/change-tracker.ts";
import type { RunStore } from "../runtime/run-store.ts";
import type { EventInput } from "./event-log.ts";
import type { RunOutcome } from "./run-events.ts";
import type { RunInfo } from "./run-info.ts";

export type ProcessEnv = Record<string, string | undefined>;

export interface RunContext {
  /** Files, processes, git, the clock and the environment: everything the effect asks of the world. */
  readonly host: Host;
  readonly machine: Machine;
  readonly store: RunStore;
  readonly info: RunInfo;
  /** The snapshot of the transition that asked for the effect. */
  readonly snapshot: Snapshot;
  /** The iteration's changes, when the pipeline measures them. */
  readonly changes: ChangeTracker | undefined;
  /** Interrupts the run: processes that get it stop. */
  readonly signal: AbortSignal;
  /** `--sandbox` from the command line, when given. */
  readonly sandboxFlag?: SandboxMode;
  /** A process environment: the inherited one with `extra` on top. */
  env(...extra: (ProcessEnv | undefined)[]): ProcessEnv;
  /** Report a run event: logged with the next checkpoint (unless transient) and shown. */
  emit(event: EventInput): void;
  /** Why the run was interrupted, once it is. */
  interrupted(): string | undefined;
}

/**
 * The environment phases inherit, copied once (reading `process.env` key by
 * key is slow). Each process environment has it as its prototype rather than
 * copying it: child_process reads inherited keys by design.
 */
export function inheritedEnv(base: ProcessEnv): (...extra: (ProcessEnv | undefined)[]) => ProcessEnv {
  const inherited = { ...base };
  return (...extra) => {
    const env = Object.create(inherited) as ProcessEnv;
    for (const e of extra) if (e) Object.assign(env, e);
    return env;
  };
}

/** How driving a machine ended: a run's, a lane's or a sub-pipeline's. */
export interface RunResult {
  exitCode: number;
  /** `awaiting`: an ask phase waits for `resume --answer` (exit 3). */
  outcome: RunOutcome | "interrupted" | "awaiting";
  snapshot: Snapshot;
}
