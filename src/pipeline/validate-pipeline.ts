import type { Document } from "yaml";
import type { Diagnostic, DiagnosticCode } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import {
  callsOf,
  checkExpression,
  checkTemplate,
  collectReferences,
  parseExpression,
  parseTemplate,
  shellContexts,
  templateReferences,
  type Expr,
  type ExprDiagnostic,
  type Scope,
} from "../expr/index.ts";
import { buildScope, type ScopeKind } from "./context-scope.ts";
import { parseDuration } from "./duration.ts";
import { nodeAtPointer, spanOfPointer, valueOffsetMapper } from "./parse-pipeline-text.ts";
import { checkCycles } from "./check-cycles.ts";
import { checkGroups } from "./check-groups.ts";
import { checkAgentPhases } from "./check-agent-phases.ts";
import { checkMcp } from "./check-mcp.ts";
import { emptyCommand } from "./empty-command.ts";
import { dirnameOf, isPromptPath, joinPath } from "./paths.ts";
import type { PhaseSpec, PipelineDoc, TransitionRule } from "./spec.ts";

/** What a semantic rule sees. */
export interface RuleContext {
  doc: PipelineDoc;
  document: Document.Parsed | undefined;
  text: string;
  file: string;
  /** Prompt files by resolved path: text, or undefined when missing. */
  promptFiles: Record<string, string | undefined>;
  /** Param names referenced anywhere (filled by the expression rules). */
  usedParams: Set<string>;
}

type Rule = (ctx: RuleContext) => Diagnostic[];

/** The resolved path of a phase's prompt file (relative to the pipeline file). */
export function promptFilePath(file: string, prompt: string): string {
  return joinPath(dirnameOf(file), prompt.trim());
}

/** Prompt files a document names, to be read before validation. */
export function promptFilesOf(value: unknown, file: string): string[] {
  const phases = (value as { phases?: unknown } | undefined)?.phases;
  if (!phases || typeof phases !== "object") return [];
  const out: string[] = [];
  for (const p of Object.values(phases as Record<string, unknown>)) {
    const prompt = (p as { prompt?: unknown } | null)?.prompt;
    if (typeof prompt === "string" && isPromptPath(prompt)) out.push(promptFilePath(file, prompt));
  }
  return out;
}

/**
 * The rules the schema cannot express, run on a schema-valid document. Each
 * rule is a named function; all of them run and all diagnostics are returned.
 */
export function validatePipeline(ctx: Omit<RuleContext, "usedParams">): Diagnostic[] {
  const full: RuleContext = { ...ctx, usedParams: new Set() };
  const rules: Rule[] = [
    checkReferences,
    checkExpressionsAndTemplates, // fills usedParams: keep before checkParams
    checkParams,
    checkReachability,
    checkStopPath,
    checkRegexes,
    checkDeadRules,
    checkDurations,
    checkEmptyCommands,
    checkCycles,
    checkGroups,
    checkAgentPhases,
    checkMcp,
  ];
  const out: Diagnostic[] = [];
  for (const rule of rules) {
    try {
      out.push(...rule(full));
    } catch (error) {
      out.push({ code: "INTERNAL", severity: "error", message: `validation rule ${rule.name} failed: ${(error as Error).message}`, file: ctx.file, start: 0, end: 0 });
    }
  }
  return out;
}

export function diag(ctx: RuleContext, code: DiagnosticCode, pointer: string, message: string, extra: Partial<Diagnostic> & { mode?: "key" | "value" } = {}): Diagnostic {
  const { mode, ...rest } = extra;
  const span = spanOfPointer(ctx.document, ctx.text, pointer, mode ?? "value");
  return { code, severity: "error", message, file: ctx.file, pointer, ...span, ...rest };
}

export const esc = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

function phaseEntries(doc: PipelineDoc): [string, PhaseSpec][] {
  return Object.entries(doc.phases ?? {}).filter(([, p]) => p && typeof p === "object");
}

export function rulesOf(phase: PhaseSpec): TransitionRule[] {
  return Array.isArray(phase.next) ? phase.next.filter((r) => r && typeof r === "object") : [];
}

// ── references to phases, agents and tool sets ───────────────────────────────

function checkReferences(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const out: Diagnostic[] = [];
  const phaseNames = Object.keys(doc.phases ?? {});
  const agentNames = Object.keys(doc.agents ?? {});
  const toolNames = Object.keys(doc.tools ?? {});
  const phaseRef = (name: string, pointer: string) => {
    if (!phaseNames.includes(name)) out.push(diag(ctx, "UNKNOWN_PHASE", pointer, `unknown phase "${name}"`, { hint: didYouMean(name, phaseNames) ?? `phases: ${phaseNames.join(", ")}` }));
  };
  for (const [name, phase] of phaseEntries(doc)) {
    const base = `/phases/${esc(name)}`;
    if (typeof phase.agent === "string" && !agentNames.includes(phase.agent)) {
      out.push(diag(ctx, "UNKNOWN_AGENT", `${base}/agent`, `unknown agent "${phase.agent}"`, { hint: didYouMean(phase.agent, agentNames) ?? (agentNames.length ? `agents: ${agentNames.join(", ")}` : "declare it under agents") }));
    }
    if (typeof phase.tools === "string" && !toolNames.includes(phase.tools)) {
      out.push(diag(ctx, "UNKNOWN_TOOLS", `${base}/tools`, `unknown tool set "${phase.tools}"`, { hint: didYouMean(phase.tools, toolNames) ?? (toolNames.length ? `tool sets: ${toolNames.join(", ")}` : "declare it under tools") }));
    }
    if (typeof phase.prompt === "string" && isPromptPath(phase.prompt)) {
      const path = promptFilePath(ctx.file, phase.prompt);
      if (ctx.promptFiles[path] === undefined) {
        out.push(diag(ctx, "PROMPT_NOT_FOUND", `${base}/prompt`, `prompt file "${phase.prompt.trim()}" does not exist (looked for "${path}")`, { hint: "prompt paths are relative to the pipeline file; inline text needs a space or a line break" }));
      }
    }
    if (typeof phase.next === "string") phaseRef(phase.next, `${base}/next`);
    rulesOf(phase).forEach((r, i) => {
      if (typeof r.goto === "string") phaseRef(r.goto, `${base}/next/${i}/goto`);
    });
    if (typeof phase.exhausted?.goto === "string") phaseRef(phase.exhausted.goto, `${base}/exhausted/goto`);
  }
  if (doc.tasks && typeof doc.tasks.final_gate === "string") phaseRef(doc.tasks.final_gate, "/tasks/final_gate");
  return out;
}

// ── reachability and a way to stop ───────────────────────────────────────────

/** Edges of the phase graph: explicit gotos, fall-through in file order, wrap-around to the loop head. */
export function phaseSuccessors(doc: PipelineDoc): Map<string, Set<string>> {
  const names = Object.keys(doc.phases ?? {});
  const edges = new Map<string, Set<string>>();
  // members of parallel groups run only with their group: fall-through passes them by
  const members = new Set(Object.values(doc.phases ?? {}).flatMap((p) => (Array.isArray(p?.parallel) ? p.parallel : [])));
  names.forEach((name, i) => {
    const phase = doc.phases[name]!;
    const next = new Set<string>();
    if (members.has(name)) return void edges.set(name, next);
    if (Array.isArray(phase?.parallel)) for (const m of phase.parallel) next.add(m);
    const fallThrough = names.slice(i + 1).find((n) => !members.has(n)) ?? names[0]!;
    if (typeof phase?.next === "string") next.add(phase.next);
    else if (Array.isArray(phase?.next)) {
      const rules = rulesOf(phase);
      for (const r of rules) if (typeof r.goto === "string") next.add(r.goto);
      if (!rules.some((r) => r.if === undefined)) next.add(fallThrough); // no rule may hold
    } else next.add(fallThrough);
    if (phase?.when !== undefined) next.add(fallThrough); // a skipped phase falls through
    if (typeof phase?.exhausted?.goto === "string") next.add(phase.exhausted.goto);
    edges.set(name, next);
  });
  return edges;
}

export function reachablePhases(doc: PipelineDoc): Set<string> {
  const names = Object.keys(doc.phases ?? {});
  const edges = phaseSuccessors(doc);
  const seen = new Set<string>();
  const stack = names.length ? [names[0]!] : [];
  if (doc.tasks?.final_gate && names.includes(doc.tasks.final_gate)) stack.push(doc.tasks.final_gate);
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    for (const m of edges.get(n) ?? []) if (names.includes(m)) stack.push(m);
  }
  return seen;
}

function checkReachability(ctx: RuleContext): Diagnostic[] {
  const reach = reachablePhases(ctx.doc);
  const out: Diagnostic[] = [];
  for (const [name] of phaseEntries(ctx.doc)) {
    if (!reach.has(name)) {
      out.push(diag(ctx, "UNREACHABLE_PHASE", `/phases/${esc(name)}`, `phase "${name}" can never be reached`, { mode: "key", hint: "no transition leads to it: add a goto, or remove the phase" }));
    }
  }
  return out;
}

function checkStopPath(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  if (doc.tasks) return []; // a queue ends when its tasks are done or blocked
  if (Array.isArray(doc.stop?.when) && doc.stop.when.length > 0) return [];
  const reach = reachablePhases(doc);
  for (const [name, phase] of phaseEntries(doc)) {
    if (reach.has(name) && rulesOf(phase).some((r) => r.stop !== undefined)) return [];
    if (reach.has(name) && typeof phase.max_visits === "number" && phase.exhausted?.goto === undefined) return []; // exhausted stops
  }
  return [
    diag(ctx, "NO_STOP_PATH", "/phases", "the loop has no way to stop except by hitting a limit", {
      mode: "key",
      hint: "add a rule such as `- if: exit_code == 0\n    stop: complete` to a phase's next, or a stop.when rule",
    }),
  ];
}

// ── expressions and templates ────────────────────────────────────────────────

interface Site {
  pointer: string;
  kind: "expression" | "template";
  scope: ScopeKind;
  phase?: string;
  /** Text of an expression or template not stored in the document (prompt files). */
  text?: string;
  file?: string;
  /** A command for `sh -c`: every value must stand where it can be quoted. */
  shell?: boolean;
  /** An agent's prompt: the one place file() is read. */
  prompt?: boolean;
}

function sitesOf(doc: PipelineDoc, promptFiles: Record<string, string | undefined>, file: string): Site[] {
  const sites: Site[] = [];
  const tpl = (pointer: string, scope: ScopeKind, phase?: string) => sites.push({ pointer, kind: "template", scope, phase });
  const sh = (pointer: string, scope: ScopeKind, phase?: string) => sites.push({ pointer, kind: "template", scope, phase, shell: true });
  const env = (obj: Record<string, string> | undefined, base: string, scope: ScopeKind, phase?: string) => {
    for (const k of Object.keys(obj ?? {})) tpl(`${base}/${esc(k)}`, scope, phase);
  };
  env(doc.env, "/env", "global");
  for (const [name, agent] of Object.entries(doc.agents ?? {})) {
    const base = `/agents/${esc(name)}`;
    (agent?.command ?? []).forEach((_, i) => tpl(`${base}/command/${i}`, "agent-command"));
    (agent?.args ?? []).forEach((_, i) => tpl(`${base}/args/${i}`, "agent-command"));
    env(agent?.env, `${base}/env`, "phase-input");
  }
  for (const [name, server] of Object.entries(doc.mcp ?? {})) {
    const base = `/mcp/${esc(name)}`;
    const s = (server ?? {}) as { command?: unknown; env?: Record<string, string>; cwd?: unknown; url?: unknown; headers?: Record<string, string> };
    if (Array.isArray(s.command)) s.command.forEach((_, i) => tpl(`${base}/command/${i}`, "phase-input"));
    env(s.env, `${base}/env`, "phase-input");
    env(s.headers, `${base}/headers`, "phase-input");
    if (typeof s.cwd === "string") tpl(`${base}/cwd`, "phase-input");
    if (typeof s.url === "string") tpl(`${base}/url`, "phase-input");
  }
  for (const [name, tools] of Object.entries(doc.tools ?? {})) {
    for (const k of ["read", "write", "bash"] as const) (tools?.[k] ?? []).forEach((_, i) => tpl(`/tools/${esc(name)}/${k}/${i}`, "global"));
  }
  for (const [name, phase] of phaseEntries(doc)) {
    const base = `/phases/${esc(name)}`;
    if (typeof phase.when === "string") sites.push({ pointer: `${base}/when`, kind: "expression", scope: "global", phase: name });
    if (typeof phase.prompt === "string") {
      if (isPromptPath(phase.prompt)) {
        const path = promptFilePath(file, phase.prompt);
        const text = promptFiles[path];
        if (text !== undefined) sites.push({ pointer: `${base}/prompt`, kind: "template", scope: "phase-input", phase: name, text, file: path, prompt: true });
      } else sites.push({ pointer: `${base}/prompt`, kind: "template", scope: "phase-input", phase: name, prompt: true });
    }
    if (typeof phase.ask === "string") tpl(`${base}/ask`, "phase-input", name);
    for (const [k, v] of Object.entries(phase.params ?? {})) if (typeof v === "string") tpl(`${base}/params/${esc(k)}`, "phase-input", name);
    if (typeof phase.run === "string") sh(`${base}/run`, "phase-input", name);
    else if (Array.isArray(phase.run)) phase.run.forEach((_, i) => tpl(`${base}/run/${i}`, "phase-input", name));
    env(phase.env, `${base}/env`, "phase-input", name);
    for (const [out, spec] of Object.entries(phase.output ?? {})) {
      if (typeof spec?.file === "string") tpl(`${base}/output/${esc(out)}/file`, "phase-input", name);
    }
    if (typeof phase.exhausted?.reason === "string") tpl(`${base}/exhausted/reason`, "phase-result", name);
    rulesOf(phase).forEach((r, i) => {
      if (typeof r.if === "string") sites.push({ pointer: `${base}/next/${i}/if`, kind: "expression", scope: "phase-result", phase: name });
      if (typeof r.reason === "string") tpl(`${base}/next/${i}/reason`, "phase-result", name);
    });
  }
  (doc.stop?.when ?? []).forEach((r, i) => {
    if (typeof r?.if === "string") sites.push({ pointer: `/stop/when/${i}/if`, kind: "expression", scope: "global" });
    if (typeof r?.reason === "string") tpl(`/stop/when/${i}/reason`, "global");
  });
  for (const k of ["max_iterations", "no_progress", "consecutive_failures"] as const) {
    if (typeof doc.stop?.[k] === "string") tpl(`/stop/${k}`, "global");
  }
  if (typeof doc.tasks?.max_attempts === "string") tpl("/tasks/max_attempts", "global");
  if (typeof doc.tasks?.only === "string") tpl("/tasks/only", "global");
  for (const [hook, spec] of Object.entries(doc.hooks ?? {})) {
    const base = `/hooks/${esc(hook)}`;
    if (typeof spec === "string") sh(base, "global");
    else if (Array.isArray(spec)) spec.forEach((_, i) => tpl(`${base}/${i}`, "global"));
    else if (spec && typeof spec.run === "string") sh(`${base}/run`, "global");
    else if (spec && Array.isArray(spec.run)) spec.run.forEach((_, i) => tpl(`${base}/run/${i}`, "global"));
  }
  return sites;
}

function valueAtPointer(doc: unknown, pointer: string): unknown {
  let cur = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (cur && typeof cur === "object") cur = (cur as Record<string, unknown>)[seg];
    else return undefined;
  }
  return cur;
}

function checkExpressionsAndTemplates(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  const scopes = new Map<string, Scope>();
  const scopeFor = (kind: ScopeKind, phase?: string) => {
    const key = `${kind}:${phase ?? ""}`;
    let s = scopes.get(key);
    if (!s) scopes.set(key, (s = buildScope(ctx.doc, kind, phase)));
    return s;
  };
  for (const site of sitesOf(ctx.doc, ctx.promptFiles, ctx.file)) {
    const source = site.text ?? valueAtPointer(ctx.doc, site.pointer);
    if (typeof source !== "string") continue;
    const scope = scopeFor(site.scope, site.phase);
    let found: ExprDiagnostic[];
    let refs: { path: string[] }[];
    const fileCalls = (e: Expr) =>
      site.prompt ? [] : callsOf(e, "file").map((c): ExprDiagnostic => ({ code: "FILE_OUTSIDE_PROMPT", message: "file() is read only in an agent's prompt", start: c.start, end: c.end, hint: "put the file's content in the prompt, or read it in the command (cat FILE)" }));
    if (site.kind === "expression") {
      const parsed = parseExpression(source);
      found = [...parsed.diagnostics];
      refs = parsed.expr ? collectReferences(parsed.expr) : [];
      if (parsed.expr) found.push(...checkExpression(parsed.expr, scope), ...fileCalls(parsed.expr));
    } else {
      const parsed = parseTemplate(source);
      found = [...parsed.diagnostics];
      refs = parsed.template ? templateReferences(parsed.template) : [];
      if (parsed.template) found.push(...checkTemplate(parsed.template, scope), ...parsed.template.parts.flatMap((p) => (p.kind === "expr" ? fileCalls(p.expr) : [])));
      if (parsed.template && site.shell) {
        const contexts = shellContexts(parsed.template);
        if (!contexts.ok) found.push(...contexts.diagnostics);
      }
    }
    for (const r of refs) if (r.path[0] === "params" && r.path[1] !== undefined) ctx.usedParams.add(r.path[1]);
    for (const d of found) out.push(locate(ctx, site, source, d));
  }
  return out;
}

function locate(ctx: RuleContext, site: Site, source: string, d: ExprDiagnostic): Diagnostic {
  const base = { code: d.code, severity: "error" as const, message: d.message, hint: d.hint, pointer: site.pointer };
  const clampS = (n: number) => Math.max(0, Math.min(n, source.length));
  if (site.file !== undefined) {
    // a prompt file: offsets are the file's own
    return { ...base, file: site.file, start: clampS(d.start), end: clampS(Math.max(d.start, d.end)) };
  }
  const { node } = nodeAtPointer(ctx.document, site.pointer);
  const map = valueOffsetMapper(ctx.text, node);
  if (map) {
    const s = map(clampS(d.start));
    const e = map(clampS(Math.max(d.start, d.end)));
    if (s >= 0 && e >= s && e <= ctx.text.length) return { ...base, file: ctx.file, start: s, end: e };
  }
  return { ...base, file: ctx.file, ...spanOfPointer(ctx.document, ctx.text, site.pointer) };
}

// ── params ───────────────────────────────────────────────────────────────────

function checkParams(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, p] of Object.entries(ctx.doc.params ?? {})) {
    const base = `/params/${esc(name)}`;
    if (!ctx.usedParams.has(name)) {
      out.push({ ...diag(ctx, "UNUSED_PARAM", base, `param "${name}" is declared but never used`, { mode: "key", hint: "use it as {{ params." + name + " }}, or remove it" }), severity: "warning" });
    }
    if (!p || p.default === undefined) continue;
    const d = p.default;
    const ok =
      p.type === "string" ? typeof d === "string" : p.type === "boolean" ? typeof d === "boolean" : p.type === "integer" ? Number.isInteger(d) : typeof d === "number";
    if (!ok) out.push(diag(ctx, "INVALID_PARAM_DEFAULT", `${base}/default`, `the default of param "${name}" is not ${p.type === "integer" ? "an integer" : `a ${p.type}`}`));
    else if (p.enum && !p.enum.includes(d as string | number)) {
      out.push(diag(ctx, "INVALID_PARAM_DEFAULT", `${base}/default`, `the default of param "${name}" is not one of ${p.enum.map((e) => JSON.stringify(e)).join(", ")}`));
    }
  }
  return out;
}

// ── regexes, dead rules, durations ───────────────────────────────────────────

function regexError(source: string): string | undefined {
  try {
    new RegExp(source, "m");
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/^Invalid regular expression: /, "");
  }
}

function checkRegexes(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  const check = (pattern: unknown, pointer: string) => {
    if (typeof pattern !== "string") return;
    const err = regexError(pattern);
    if (err) out.push(diag(ctx, "INVALID_REGEX", pointer, `invalid regular expression: ${err}`));
  };
  for (const [name, phase] of phaseEntries(ctx.doc)) {
    const base = `/phases/${esc(name)}`;
    for (const [out_, spec] of Object.entries(phase.output ?? {})) check(spec?.match, `${base}/output/${esc(out_)}/match`);
    (phase.transient?.patterns ?? []).forEach((p, i) => check(p, `${base}/transient/patterns/${i}`));
  }
  for (const [name, agent] of Object.entries(ctx.doc.agents ?? {})) {
    (agent?.transient?.patterns ?? []).forEach((p, i) => check(p, `/agents/${esc(name)}/transient/patterns/${i}`));
  }
  return out;
}

function checkDeadRules(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, phase] of phaseEntries(ctx.doc)) {
    const rules = rulesOf(phase);
    const firstUnconditional = rules.findIndex((r) => r.if === undefined);
    if (firstUnconditional >= 0 && firstUnconditional < rules.length - 1) {
      const ptr = `/phases/${esc(name)}/next/${firstUnconditional + 1}`;
      out.push({ ...diag(ctx, "DEAD_RULE", ptr, `this rule can never apply: the rule before it has no "if" and always wins`), severity: "warning", hint: "move the unconditional rule last" });
    }
  }
  return out;
}

function checkDurations(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  const check = (v: unknown, pointer: string) => {
    if (v === undefined) return;
    if ((typeof v === "string" || typeof v === "number") && parseDuration(v) !== undefined) return;
    out.push(diag(ctx, "INVALID_DURATION", pointer, `${JSON.stringify(v)} is not a duration`, { hint: "use seconds (30) or a string such as \"10s\", \"5m\", \"1h30m\"" }));
  };
  for (const [name, phase] of phaseEntries(ctx.doc)) {
    const base = `/phases/${esc(name)}`;
    check(phase.timeout, `${base}/timeout`);
    check(phase.idle_timeout, `${base}/idle_timeout`);
    check(phase.retry?.interval, `${base}/retry/interval`);
    check(phase.retry?.max_delay, `${base}/retry/max_delay`);
  }
  check(ctx.doc.stop?.max_duration, "/stop/max_duration");
  return out;
}


// ── commands that run nothing ─────────────────────────────────────────────────

function checkEmptyCommands(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, phase] of phaseEntries(ctx.doc)) {
    const run = phase.run;
    if (typeof run !== "string" && !(Array.isArray(run) && run.every((a) => typeof a === "string"))) continue;
    const empty = emptyCommand(run);
    if (!empty) continue;
    const pointer = `/phases/${esc(name)}/run${empty.index !== undefined && Array.isArray(run) && run.length > 0 ? `/${empty.index}` : ""}`;
    out.push(diag(ctx, "EMPTY_COMMAND", pointer, `phase "${name}" runs nothing: ${empty.message}`, { hint: "a command that runs nothing passes without checking anything; give it a real command" }));
  }
  return out;
}
