/**
 * What `run` will do, phase by phase, for `run --dry-run`: each phase's invocation built by
 * the functions the run builds it with (the phase.run effect of the machine, preparePhase,
 * the write scope, the sandbox profile and the fence's variables), with nothing written,
 * started or fenced. Variables are named, never valued. Paths name the run folder
 * `.phaseloop/runs/RUN_ID/` and each phase's folder by the number it gets when the phases
 * run in file order in iteration 1.
 */
import { join } from "node:path";
import { homedir } from "node:os";
import process from "node:process";
import { renderTemplate } from "../expr/index.ts";
import { nodeHost } from "../host/node-host.ts";
import { contextOf, type Draft } from "../machine/draft.ts";
import { initialSnapshot } from "../machine/transition.ts";
import { phaseRunEffect } from "../machine/phase-results.ts";
import type { CompiledPhase, Machine, Snapshot } from "../machine/types.ts";
import type { JsonValue, SandboxMode } from "../pipeline/spec.ts";
import { readInside } from "../host/read-inside.ts";
import { bwrapArgs } from "../sandbox/bwrap-args.ts";
import { phaseSandbox } from "../machine/sandbox-plan.ts";
import { agentState, type SandboxProfile } from "../sandbox/compile-sandbox.ts";
import { openWriteScope } from "./phase-changes.ts";
import { agentKind, phaseProfile, STATE_VAR_NAMES, stateSourceAllowed, withheldFor, withStateCopy } from "./phase-fence.ts";
import { planStateCopy } from "./agent-state.ts";
import { preparePhase, type InvocationFiles } from "./phase-invocation.ts";
import { artifactsRel } from "./run-artifacts.ts";
import { inheritedEnv, type RunContext } from "./run-context.ts";
import { livableEnv } from "./fence-livable.ts";
import type { RunSandbox } from "./run-info.ts";
import { checkSandbox } from "./sandbox-preflight.ts";
import { pickEnv } from "./start-run.ts";
import { probeSandbox } from "../host/probe-sandbox.ts";
import { createAgentTools } from "../agents/openai/agent-tools.ts";
import { openAiBaseUrl } from "../agents/openai/openai-agent.ts";

/** The run id a dry run names paths with. */
export const PLAN_RUN_ID = "RUN_ID";
/** The temp dir a dry run names: the run makes one per phase. */
const PLAN_TEMP = "<temp dir>";
/** The run's cache home (XDG_CACHE_HOME inside the fence), made when the run starts. */
const PLAN_CACHE = "<run cache>";

export interface PhaseSandboxPlan {
  /** As the pipeline, the phase and `--sandbox` decide it. */
  mode: SandboxMode;
  /** on: fenced; off: asked off (or a run phase by default); unavailable: auto, and no sandbox for it here. */
  state: "on" | "off" | "unavailable";
  writes?: string[];
  never?: string[];
  hosts?: string[];
  /** Secret paths of the home directory it cannot read. */
  hidden?: number;
  /** Variables the fence sets inside (names). */
  env?: string[];
  /** Inherited variables the fence keeps out of the process (names). */
  withheld?: string[];
}

export interface PhasePlan {
  phase: string;
  kind: CompiledPhase["kind"];
  /** What starts, before the sandbox wraps it: argv, or a shell command run by `sh -c`. */
  command?: string | string[];
  /** The built-in agent: no process; the server it asks and the tools it offers the model. */
  builtin?: { url: string; model: string | null; tools: string[] };
  /** What goes to stdin: the rendered prompt, or nothing (stdin closed). */
  stdin?: "prompt";
  prompt_file?: string;
  /** Variables phaseloop sets for the process, over the inherited environment (names only). */
  env?: string[];
  sandbox?: PhaseSandboxPlan;
  /** Each output and where it is read from. */
  outputs?: Record<string, string>;
  timeout_ms?: number;
  idle_timeout_ms?: number;
  retry?: { max_attempts: number; on: string[] };
  /** ask phases. */
  question?: string;
  /** parallel groups. */
  members?: string[];
  join?: string;
  /** sub-pipelines. */
  pipeline?: string;
  /** Why the invocation cannot be built (the run fails the phase with it). */
  error?: string;
}

export interface RunPlan {
  pipeline: string;
  file: string;
  workdir: string;
  params: Record<string, JsonValue>;
  limits: { max_iterations: number; no_progress: number | null };
  sandbox: { available: boolean; platform?: string; reason?: string; no_proxy?: string };
  phases: PhasePlan[];
}

export interface PlanOptions {
  machine: Machine;
  params: Record<string, JsonValue>;
  workdir: string;
  env: Record<string, string | undefined>;
  maxIterations?: number;
  sandbox?: SandboxMode;
  /** The pipeline's absolute path. */
  file: string;
  dir: string;
}

/** Names the files an invocation would write, writes none. */
const namedFiles: InvocationFiles = {
  artifacts: (workdir, runId) => join(workdir, artifactsRel(runId)),
  write: () => undefined,
};

export function planRun(o: PlanOptions): RunPlan {
  const { machine, workdir } = o;
  const snapshot = initialSnapshot(machine, { runId: PLAN_RUN_ID, params: o.params, env: pickEnv(machine, o.env), pipeline: { name: machine.name, file: o.file, dir: o.dir }, workdir });
  if (o.maxIterations !== undefined) snapshot.limits.maxIterations = o.maxIterations;
  snapshot.iteration = 1;
  const check = checkSandbox(machine, "", o.sandbox, o.env, workdir);
  // a machine asked for no sandbox by any phase still says whether it has one
  const offer: RunSandbox = check.record.available || machine.phases.some((p) => phaseSandbox(machine, p, o.sandbox).mode !== "off") ? check.record : offerOf(check.record);
  const plan: RunPlan = {
    pipeline: machine.name,
    file: o.file,
    workdir,
    params: o.params,
    limits: { max_iterations: snapshot.limits.maxIterations, no_progress: snapshot.limits.noProgress },
    sandbox: offer.available ? { available: true, ...(offer.platform ? { platform: offer.platform } : {}), ...(offer.no_proxy ? { no_proxy: offer.no_proxy.reason } : {}) } : { available: false, ...(offer.reason ? { reason: offer.reason } : {}) },
    phases: [],
  };
  const env = inheritedEnv(o.env);
  for (const [i, phase] of machine.phases.entries()) plan.phases.push(planPhase(o, phase, i + 1, snapshot, env, check.record));
  return plan;
}

function offerOf(record: RunSandbox): RunSandbox {
  const probed = probeSandbox();
  return probed.available ? { ...record, available: true, platform: probed.platform } : { ...record, available: false, reason: probed.reason };
}

function planPhase(o: PlanOptions, phase: CompiledPhase, seq: number, snapshot: Snapshot, env: ReturnType<typeof inheritedEnv>, record: RunSandbox): PhasePlan {
  const { machine, workdir } = o;
  const out: PhasePlan = { phase: phase.name, kind: phase.kind };
  if (phase.kind === "ask") {
    const r = phase.ask ? renderTemplate(phase.ask, contextOf({ m: machine, s: snapshot, fx: [] })) : undefined;
    out.question = r?.ok ? r.value : "";
    if (phase.timeoutMs > 0) out.timeout_ms = phase.timeoutMs;
    return out;
  }
  if (phase.kind === "group") return { ...out, members: phase.members ?? [], join: phase.join ?? "all_success" };
  if (Object.keys(phase.output).length) out.outputs = describeOutputs(phase, {});
  out.retry = { max_attempts: phase.retry.maxAttempts, on: [...phase.retry.on] };
  if (phase.kind === "pipeline") return { ...out, pipeline: phase.pipeline };
  out.timeout_ms = phase.timeoutMs;
  if (phase.idleTimeoutMs) out.idle_timeout_ms = phase.idleTimeoutMs;

  const mode = phaseSandbox(machine, phase, o.sandbox).mode;
  const state = record.phases[phase.name] ?? (mode === "off" ? "off" : "unavailable");
  out.sandbox = { mode, state };
  const d: Draft = { m: machine, s: structuredClone(snapshot), fx: [] };
  d.s.phaseSeq = seq;
  const effect = phaseRunEffect(d, phase, 1, seq, contextOf(d));
  if ("error" in effect) return { ...out, error: effect.error };
  let e = effect;
  if (out.outputs) out.outputs = describeOutputs(phase, e.outputFiles);
  if (e.promptReadsFiles && phase.prompt) {
    const r = renderTemplate(phase.prompt, e.context, { env: { readFile: (path, max) => readInside(workdir, path, max) } });
    if (!r.ok) return { ...out, error: `cannot render the prompt of phase "${phase.name}": ${r.error}` };
    e = { ...e, prompt: r.value };
  }
  const dir = join(workdir, ".phaseloop", "runs", PLAN_RUN_ID, "phases", `${String(seq).padStart(4, "0")}-${phase.name}`);
  const ctx = planContext(o, snapshot, env);
  const prepared = preparePhase(e, phase, dir, ctx, namedFiles);
  if (!prepared.ok) return { ...out, error: prepared.message };
  const inv = prepared.invocation;
  if (inv.builtin) {
    const tools = createAgentTools({ tools: inv.builtin.tools, workdir, runCommand: async () => ({ exitCode: 0, output: "" }) as never, glob: () => () => false, files: ctx.host.files });
    out.builtin = { url: `${openAiBaseUrl(inv.builtin.agent)}/chat/completions`, model: inv.builtin.agent.model ?? null, tools: tools.definitions.map((d) => d.function.name) };
  } else out.command = inv.command;
  if (inv.stdin !== undefined) out.stdin = "prompt";
  if (phase.kind === "agent") out.prompt_file = join(dir, "prompt.md");
  out.env = Object.keys(inv.env).sort();

  if (mode === "off") return out;
  const toolSet = phase.tools ? machine.tools[phase.tools] : undefined;
  const scope = openWriteScope(toolSet, e.context, ctx);
  const compiled = phaseProfile(machine, phase, toolSet ? (scope?.globs ?? []) : undefined, inv.env, workdir, PLAN_TEMP, inv.command, namedFiles.artifacts(workdir, PLAN_RUN_ID));
  // as the fence lays it out (phase-fence.ts): the run's cache home writable, the livable settings inside
  // an agent CLI works on the run's copy of its state (agent-state.ts), in place of the user's
  const kind = agentKind(phase, machine, inv.command);
  const copy = phase.kind === "agent" ? planStateCopy(kind, inv.env, PLAN_RUN_ID, stateSourceAllowed(workdir, inv.env)) : undefined;
  const userState = agentState({ agent: kind, home: inv.env.HOME || homedir(), stateDirs: STATE_VAR_NAMES.map((n) => inv.env[n] ?? "").filter((d) => compiled.allowWrite.includes(d)) });
  const profile: SandboxProfile = copy === undefined ? { ...compiled, allowWrite: [...compiled.allowWrite, PLAN_CACHE] } : withStateCopy(compiled, kind, userState, copy, PLAN_CACHE);
  const inside = { ...livableEnv(profile, workdir, PLAN_CACHE, inv.env), ...copy?.env, TMPDIR: PLAN_TEMP };
  const kept = Object.keys(withheldFor(phase, machine, inv.env, inv.command)).sort();
  const home = inv.env.HOME || homedir();
  const short = (p: string) => (p.startsWith(`${workdir}/`) ? `./${p.slice(workdir.length + 1)}` : p === workdir ? "./" : p.startsWith(`${home}/`) ? `~/${p.slice(home.length + 1)}` : p);
  out.sandbox = { mode, state, writes: profile.allowWrite.map(short), never: profile.denyWrite.map(short), hosts: [...profile.allowedHosts], hidden: profile.denyRead.length, ...(state === "on" ? { env: fenceEnvNames(profile, workdir, inv.command, inside), withheld: kept } : {}) };
  return out;
}

/** The context preparePhase and the write scope read: the run's, with nothing to write to. */
function planContext(o: PlanOptions, snapshot: Snapshot, env: ReturnType<typeof inheritedEnv>): RunContext {
  return {
    host: nodeHost,
    machine: o.machine,
    store: undefined as never,
    info: { run_id: PLAN_RUN_ID, workdir: o.workdir } as RunContext["info"],
    snapshot,
    // a phase with a tool set measures its changes: its write scope is rendered as the run renders it
    changes: o.machine.measuresChanges ? ({ startPhase: () => ({}) } as unknown as RunContext["changes"]) : undefined,
    signal: new AbortController().signal,
    sandboxFlag: o.sandbox,
    env,
    emit: () => undefined,
    interrupted: () => undefined,
  };
}

/**
 * The variables the fence sets inside, as bwrapArgs sets them (the run's own fence on Linux):
 * without allowed hosts, its --setenv list; with them, the proxy's variables and the exports.
 */
function fenceEnvNames(profile: SandboxProfile, workdir: string, command: string | string[], inside: Record<string, string>): string[] {
  if (process.platform !== "linux") return [];
  const exports = { NO_PROXY: "", no_proxy: "", ...inside };
  const proxy = profile.allowedHosts.length > 0 ? { socket: "<socket>", token: "<token>", username: "<user>" } : undefined;
  const { args, env } = bwrapArgs({ profile, cwd: workdir, command, exports, ...(proxy ? { proxy } : {}), seccomp: { hex: "", fd: 3, perl: { path: "perl", prctl: 0 } }, socat: "socat", nestedProtected: [], kindOf: () => undefined });
  const names = new Set<string>(["TMPDIR"]);
  if (proxy) {
    for (const k of Object.keys(env)) names.add(k);
    for (const k of Object.keys(exports)) names.add(k);
  } else for (let i = 0; i < args.length; i++) if (args[i] === "--setenv") names.add(args[++i]!);
  return [...names].sort();
}

/** Each output and where it is read from (`files`: the output files as rendered for this phase). */
function describeOutputs(phase: CompiledPhase, files: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, o] of Object.entries(phase.output)) {
    const from = o.from && o.from !== "text" ? ` of ${o.from}` : "";
    const how = o.file !== undefined ? `file ${files[name] ?? o.file}` : o.match !== undefined ? `match ${o.match}${from}` : o.tag !== undefined ? `tag <${o.tag}>${from}` : o.section !== undefined ? `section ${o.section}${from}` : o.json !== undefined ? `json${typeof o.json === "string" ? ` ${o.json}` : ""} of the final message` : "the final message";
    out[name] = `${how}${o.required ? ", required" : ""}${o.schema ? ", with a schema" : ""}`;
  }
  return out;
}
