import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { parseDuration } from "./duration.ts";
import { checkCycles } from "./check-cycles.ts";
import { checkExpressionsAndTemplates } from "./check-expressions.ts";
import { checkGroups } from "./check-groups.ts";
import { checkAgentPhases } from "./check-agent-phases.ts";
import { checkMcp } from "./check-mcp.ts";
import { checkOutputFiles } from "./check-output-files.ts";
import { checkModelTemplates } from "./check-model-templates.ts";
import { checkPaths } from "./check-paths.ts";
import { emptyCommand } from "./empty-command.ts";
import { isPromptPath } from "./paths.ts";
import { checkReachability, checkStopPath } from "./phase-graph.ts";
import { diag, esc, phaseEntries, promptFilePath, rulesOf, type Rule, type RuleContext } from "./rule-context.ts";

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
    checkModelTemplates, // so does this one
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
    checkOutputFiles,
    checkPaths,
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

// ── references to phases, agents and tool sets ───────────────────────────────

function checkReferences(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const out: Diagnostic[] = [];
  const phaseNames = Object.keys(doc.phases ?? {});
  const agentNames = Object.keys(doc.agents ?? {});
  const toolNames = Object.keys(doc.tools ?? {});
  const phaseSet = new Set(phaseNames), agentSet = new Set(agentNames), toolSet = new Set(toolNames);
  const phaseRef = (name: string, pointer: string) => {
    if (!phaseSet.has(name)) out.push(diag(ctx, "UNKNOWN_PHASE", pointer, `unknown phase "${name}"`, { hint: didYouMean(name, phaseNames) ?? `phases: ${phaseNames.join(", ")}` }));
  };
  for (const [name, phase] of phaseEntries(doc)) {
    const base = `/phases/${esc(name)}`;
    if (typeof phase.agent === "string" && !agentSet.has(phase.agent)) {
      out.push(diag(ctx, "UNKNOWN_AGENT", `${base}/agent`, `unknown agent "${phase.agent}"`, { hint: didYouMean(phase.agent, agentNames) ?? (agentNames.length ? `agents: ${agentNames.join(", ")}` : "declare it under agents") }));
    }
    if (typeof phase.tools === "string" && !toolSet.has(phase.tools)) {
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
