import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { parseExpression, parseTemplate, type Expr, type Template } from "../expr/index.ts";
import { parseDuration } from "../pipeline/duration.ts";
import { dirnameOf, isPromptPath, joinPath } from "../pipeline/paths.ts";
import type { AgentSpec, Duration, HookName, HookSpec, PhaseSpec, PipelineDoc } from "../pipeline/spec.ts";
import { phaseModel } from "../pipeline/phase-model.ts";
import type { CompiledHook, CompiledPhase, CompiledRule, CompiledTasks, LimitSource, Machine, RetryPolicy } from "./types.ts";

/**
 * Every default of the format, in one place. docs/format.md and
 * docs/stop-logic.md quote these.
 */
export const DEFAULTS = {
  agentTimeoutMs: 30 * 60_000,
  agentIdleTimeoutMs: 10 * 60_000,
  runTimeoutMs: 10 * 60_000,
  /** An ask phase waits this long in a terminal; 0: as long as it takes. */
  askTimeoutMs: 0,
  hookTimeoutMs: 60_000,
  retry: { maxAttempts: 3, on: ["transient"], intervalMs: 10_000, backoff: 2, maxDelayMs: 5 * 60_000, jitter: false } satisfies RetryPolicy,
  taskMaxAttempts: 5,
  successExitCodes: [0],
} as const;

class CompileError extends Error {}

/**
 * Compile a validated pipeline into a machine: plain data with parsed guards
 * and templates, resolved timeouts and retry policies, and defaults filled in.
 * Never throws; a problem the validator should have caught comes back as a
 * diagnostic.
 */
export function compilePipeline(doc: PipelineDoc, options: { promptFiles?: Record<string, string | undefined>; file?: string } = {}): { machine?: Machine; diagnostics: Diagnostic[] } {
  const file = options.file ?? "pipeline.yaml";
  const diagnostics: Diagnostic[] = [];
  const fail = (message: string) => {
    throw new CompileError(message);
  };
  const expr = (source: string, where: string): Expr => {
    const r = parseExpression(source);
    if (!r.expr) fail(`${where}: ${r.diagnostics[0]?.message ?? "invalid expression"}`);
    return r.expr!;
  };
  const template = (source: string, where: string): Template => {
    const r = parseTemplate(source);
    if (!r.template) fail(`${where}: ${r.diagnostics[0]?.message ?? "invalid template"}`);
    return r.template!;
  };
  const duration = (d: Duration | undefined, fallback: number | null, where: string): number | null => {
    if (d === undefined) return fallback;
    const ms = parseDuration(d);
    if (ms === undefined) fail(`${where}: ${JSON.stringify(d)} is not a duration`);
    return ms!;
  };
  const limit = (v: number | string | undefined, where: string): LimitSource | null => (v === undefined ? null : typeof v === "number" ? v : template(v, where));

  try {
    const names = Object.keys(doc.phases);
    const groupOf = new Map<string, string>();
    for (const name of names) for (const member of doc.phases[name]!.parallel ?? []) if (!groupOf.has(member)) groupOf.set(member, name);
    const phases: CompiledPhase[] = names.map((name, index) => compilePhase(doc, name, doc.phases[name]!, index, { expr, template, duration, fail, promptFiles: options.promptFiles ?? {}, file, groupOf }));
    const hooks: Partial<Record<HookName, CompiledHook>> = {};
    for (const [name, spec] of Object.entries(doc.hooks ?? {}) as [HookName, string | string[] | HookSpec][]) {
      const h: HookSpec = typeof spec === "string" || Array.isArray(spec) ? { run: spec } : spec;
      hooks[name] = {
        name,
        command: typeof h.run === "string" ? { shell: template(h.run, `hooks.${name}`) } : { argv: h.run.map((a, i) => template(a, `hooks.${name}[${i}]`)) },
        timeoutMs: duration(h.timeout, DEFAULTS.hookTimeoutMs, `hooks.${name}.timeout`)!,
        onFailure: h.on_failure ?? "ignore",
        ...(h.sandbox !== undefined ? { sandbox: h.sandbox } : {}),
        ...(h.network !== undefined ? { network: h.network } : {}),
      };
    }
    let tasks: CompiledTasks | null = null;
    if (doc.tasks) {
      const src = doc.tasks.source;
      tasks = {
        source:
          "glob" in src
            ? { kind: "glob", glob: src.glob }
            : {
                kind: "json",
                file: src.file,
                pointer: src.pointer ?? "",
                fields: {
                  id: src.fields?.id ?? "id",
                  title: src.fields?.title ?? "title",
                  priority: src.fields?.priority ?? "priority",
                  done: src.fields?.done ?? "done",
                  blocked: src.fields?.blocked ?? "blocked",
                  depends_on: src.fields?.depends_on ?? "depends_on",
                  notes: src.fields?.notes ?? "notes",
                  attempts: src.fields?.attempts ?? "attempts",
                },
                writeBack: src.write_back ?? false,
              },
        maxAttempts: limit(doc.tasks.max_attempts, "tasks.max_attempts") ?? DEFAULTS.taskMaxAttempts,
        order: doc.tasks.order ?? "priority",
        only: doc.tasks.only !== undefined ? template(doc.tasks.only, "tasks.only") : undefined,
        finalGate: doc.tasks.final_gate,
        ...(doc.tasks.parallel !== undefined ? { parallel: doc.tasks.parallel } : {}),
      };
    }
    const env: Record<string, Template> = {};
    for (const [k, v] of Object.entries(doc.env ?? {})) env[k] = template(v, `env.${k}`);
    const source = JSON.stringify(doc) + Object.values(options.promptFiles ?? {}).join("\n");
    const usesChanges = /\bchanges\b/.test(source);
    const envNames = [...new Set([...source.matchAll(/\benv\.([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))].sort();
    const machine: Machine = {
      name: doc.name,
      description: doc.description,
      file,
      phases,
      head: names[0]!,
      limits: {
        maxIterations: limit(doc.stop.max_iterations, "stop.max_iterations")!,
        maxDurationMs: duration(doc.stop.max_duration, null, "stop.max_duration"),
        noProgress: limit(doc.stop.no_progress, "stop.no_progress"),
        consecutiveFailures: limit(doc.stop.consecutive_failures, "stop.consecutive_failures"),
        budgetTokens: doc.stop.budget?.tokens ?? null,
        budgetCostUsd: doc.stop.budget?.cost_usd ?? null,
      },
      stopRules: (doc.stop.when ?? []).map((r, i) => ({
        ifText: r.if,
        if: expr(r.if, `stop.when[${i}].if`),
        outcome: r.outcome,
        reason: r.reason !== undefined ? template(r.reason, `stop.when[${i}].reason`) : undefined,
      })),
      tasks,
      hooks,
      params: doc.params ?? {},
      agents: doc.agents ?? {},
      tools: doc.tools ?? {},
      ...(doc.mcp ? { mcp: doc.mcp } : {}),
      sandbox: doc.sandbox,
      ...(doc.on_refusal !== undefined ? { onRefusal: doc.on_refusal } : {}),
      env,
      envNames,
      measuresChanges: doc.stop.no_progress !== undefined || phases.some((p) => p.tools !== undefined) || usesChanges,
    };
    return { machine, diagnostics };
  } catch (error) {
    if (!(error instanceof CompileError)) throw error;
    diagnostics.push({ code: "INTERNAL", severity: "error", message: `cannot compile the pipeline: ${error.message}`, file, start: 0, end: 0 });
    return { diagnostics };
  }
}

interface Tools {
  expr: (s: string, where: string) => Expr;
  template: (s: string, where: string) => Template;
  duration: (d: Duration | undefined, fallback: number | null, where: string) => number | null;
  fail: (message: string) => never;
  promptFiles: Record<string, string | undefined>;
  file: string;
  /** Each member of a parallel group, to its group. */
  groupOf: ReadonlyMap<string, string>;
}

function compilePhase(doc: PipelineDoc, name: string, spec: PhaseSpec, index: number, t: Tools): CompiledPhase {
  const where = `phases.${name}`;
  const kind = spec.run !== undefined ? "run" : spec.ask !== undefined ? "ask" : spec.parallel !== undefined ? "group" : spec.pipeline !== undefined ? "pipeline" : "agent";
  const memberOf = t.groupOf.get(name);
  const agent = spec.agent !== undefined ? doc.agents?.[spec.agent] : undefined;
  let prompt: Template | undefined;
  let promptSource: string | undefined;
  if (spec.prompt !== undefined) {
    if (isPromptPath(spec.prompt)) {
      const path = joinPath(dirnameOf(t.file), spec.prompt.trim());
      const text = t.promptFiles[path];
      if (text === undefined) t.fail(`${where}.prompt: prompt file "${path}" was not read`);
      prompt = t.template(text!, path);
      promptSource = path;
    } else {
      prompt = t.template(spec.prompt, `${where}.prompt`);
      promptSource = "inline";
    }
  }
  const rules: CompiledRule[] =
    typeof spec.next === "string"
      ? [{ goto: spec.next }]
      : (spec.next ?? []).map((r, i) => ({
          ifText: r.if,
          if: r.if !== undefined ? t.expr(r.if, `${where}.next[${i}].if`) : undefined,
          goto: r.goto,
          stop: r.stop,
          reason: r.reason !== undefined ? t.template(r.reason, `${where}.next[${i}].reason`) : undefined,
          task: r.task,
          ...(r.label !== undefined ? { label: r.label } : {}),
        }));
  const r = spec.retry;
  const retry: RetryPolicy = {
    maxAttempts: r?.max_attempts ?? DEFAULTS.retry.maxAttempts,
    on: r?.on ?? [...DEFAULTS.retry.on],
    intervalMs: t.duration(r?.interval, DEFAULTS.retry.intervalMs, `${where}.retry.interval`)!,
    backoff: r?.backoff ?? DEFAULTS.retry.backoff,
    maxDelayMs: t.duration(r?.max_delay, DEFAULTS.retry.maxDelayMs, `${where}.retry.max_delay`)!,
    jitter: r?.jitter ?? DEFAULTS.retry.jitter,
  };
  const env: Record<string, Template> = {};
  for (const [k, v] of Object.entries(spec.env ?? {})) env[k] = t.template(v, `${where}.env.${k}`);
  const outputFiles: Record<string, Template> = {};
  for (const [k, o] of Object.entries(spec.output ?? {})) if (o.file !== undefined) outputFiles[k] = t.template(o.file, `${where}.output.${k}.file`);
  const timeoutFallback = kind === "ask" || kind === "group" || kind === "pipeline" ? DEFAULTS.askTimeoutMs : kind === "run" ? DEFAULTS.runTimeoutMs : t.duration(agent?.timeout, DEFAULTS.agentTimeoutMs, `agents.${spec.agent}.timeout`);
  const idleFallback = kind !== "agent" ? null : t.duration(agent?.idle_timeout, DEFAULTS.agentIdleTimeoutMs, `agents.${spec.agent}.idle_timeout`);
  return {
    name,
    index,
    kind,
    agent: spec.agent,
    tools: spec.tools,
    ...(spec.mcp?.length ? { mcp: [...spec.mcp] } : {}),
    prompt,
    promptSource,
    run: spec.run === undefined ? undefined : typeof spec.run === "string" ? { shell: t.template(spec.run, `${where}.run`) } : { argv: spec.run.map((a, i) => t.template(a, `${where}.run[${i}]`)) },
    ask: spec.ask !== undefined ? t.template(spec.ask, `${where}.ask`) : undefined,
    ...(spec.parallel ? { members: [...spec.parallel], join: spec.join ?? "all_success" } : {}),
    ...(memberOf !== undefined ? { memberOf } : {}),
    ...(spec.pipeline !== undefined ? { pipeline: spec.pipeline, params: Object.fromEntries(Object.entries(spec.params ?? {}).map(([k, v]) => [k, t.template(String(v), `${where}.params.${k}`)])) } : {}),
    whenText: spec.when,
    when: spec.when !== undefined ? t.expr(spec.when, `${where}.when`) : undefined,
    timeoutMs: t.duration(spec.timeout, timeoutFallback, `${where}.timeout`)!,
    idleTimeoutMs: t.duration(spec.idle_timeout, idleFallback, `${where}.idle_timeout`),
    retry,
    output: spec.output ?? {},
    outputSchema: spec.output_schema,
    outputFiles,
    rules,
    env,
    successExitCodes: spec.success_exit_codes ?? [...DEFAULTS.successExitCodes],
    consecutiveFailures: spec.consecutive_failures ?? null,
    transient: [agent?.transient, spec.transient].filter((x) => x !== undefined),
    maxVisits: spec.max_visits ?? null,
    exhausted:
      spec.max_visits === undefined
        ? null
        : {
            goto: spec.exhausted?.goto,
            stop: spec.exhausted?.goto === undefined ? (spec.exhausted?.stop ?? "blocked") : undefined,
            reason: spec.exhausted?.reason !== undefined ? t.template(spec.exhausted.reason, `${where}.exhausted.reason`) : undefined,
          },
    sandbox: spec.sandbox,
    ...(spec.on_refusal !== undefined ? { onRefusal: spec.on_refusal } : {}),
    ...(spec.network !== undefined ? { network: spec.network } : {}),
    ...(kind === "agent" ? agentChoices(agent, spec) : {}),
  };
}

/** An agent phase's model (a tier resolved) and the session it continues. */
function agentChoices(agent: AgentSpec | undefined, spec: PhaseSpec): Pick<CompiledPhase, "model" | "modelTier" | "session"> {
  const { model, tier } = phaseModel(agent, spec.model);
  const s = spec.session;
  const session = s === "continue" ? { continue: "agent" as const } : typeof s === "object" && s !== null ? { continue: "phase" as const, phase: s.continue } : undefined;
  return { ...(model !== undefined ? { model } : {}), ...(tier !== undefined ? { modelTier: tier } : {}), ...(session ? { session } : {}) };
}
