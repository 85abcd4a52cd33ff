/**
 * Every expression and template of a pipeline (and of its prompt files),
 * parsed and checked against the context it is evaluated in, each problem
 * located in the file it was written in.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import {
  callsOf,
  checkExpression,
  checkTemplate,
  collectReferences,
  parseExpression,
  parseTemplate,
  shellContexts,
  checkArgv,
  templateReferences,
  type Template,
  type Expr,
  type ExprDiagnostic,
  type Scope,
} from "../expr/index.ts";
import { buildScope, type ScopeKind } from "./context-scope.ts";
import { nodeAtPointer, spanOfPointer, valueOffsetMapper } from "./parse-pipeline-text.ts";
import { isPromptPath } from "./paths.ts";
import { esc, phaseEntries, promptFilePath, rulesOf, type RuleContext } from "./rule-context.ts";
import type { PipelineDoc } from "./spec.ts";

/** Checks every expression and template; records the params they use in ctx.usedParams. */
interface Site {
  pointer: string;
  kind: "expression" | "template";
  scope: ScopeKind;
  phase?: string;
  /** Text of an expression or template not stored in the document (prompt files). */
  text?: string;
  file?: string;
  /** A command for `sh -c`: every value must stand where it stays data. */
  shell?: boolean;
  /** The whole argv list this element belongs to (its pointer's parent), checked once at element 0; `plain`: rendered as text (MCP). */
  argv?: { pointer: string; plain?: boolean; after?: string };
  /** An agent's prompt: the one place file() is read. */
  prompt?: boolean;
}

function sitesOf(doc: PipelineDoc, promptFiles: Record<string, string | undefined>, file: string): Site[] {
  const sites: Site[] = [];
  const tpl = (pointer: string, scope: ScopeKind, phase?: string) => sites.push({ pointer, kind: "template", scope, phase });
  const sh = (pointer: string, scope: ScopeKind, phase?: string) => sites.push({ pointer, kind: "template", scope, phase, shell: true });
  const argv = (list: unknown, base: string, scope: ScopeKind, phase?: string, plain?: boolean, after?: string) => {
    if (Array.isArray(list)) list.forEach((_, i) => sites.push({ pointer: `${base}/${i}`, kind: "template", scope, phase, argv: { pointer: base, ...(plain ? { plain } : {}), ...(after ? { after } : {}) } }));
  };
  const env = (obj: Record<string, string> | undefined, base: string, scope: ScopeKind, phase?: string) => {
    for (const k of Object.keys(obj ?? {})) tpl(`${base}/${esc(k)}`, scope, phase);
  };
  env(doc.env, "/env", "global");
  for (const [name, agent] of Object.entries(doc.agents ?? {})) {
    const base = `/agents/${esc(name)}`;
    argv(agent?.command, `${base}/command`, "agent-command");
    // an agent's args follow its command: judged as one argv list
    argv(agent?.args, `${base}/args`, "agent-command", undefined, false, `${base}/command`);
    env(agent?.env, `${base}/env`, "phase-input");
  }
  for (const [name, server] of Object.entries(doc.mcp ?? {})) {
    const base = `/mcp/${esc(name)}`;
    const s = (server ?? {}) as { command?: unknown; env?: Record<string, string>; cwd?: unknown; url?: unknown; headers?: Record<string, string> };
    argv(s.command, `${base}/command`, "phase-input", undefined, true);
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
    else argv(phase.run, `${base}/run`, "phase-input", name);
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
    else if (Array.isArray(spec)) argv(spec, base, "global");
    else if (spec && typeof spec.run === "string") sh(`${base}/run`, "global");
    else if (spec && Array.isArray(spec.run)) argv(spec.run, `${base}/run`, "global");
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

export function checkExpressionsAndTemplates(ctx: RuleContext): Diagnostic[] {
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
      if (parsed.template && site.argv) found.push(...argvProblems(ctx, site, source));
    }
    for (const r of refs) if (r.path[0] === "params" && r.path[1] !== undefined) ctx.usedParams.add(r.path[1]);
    for (const d of found) out.push(locate(ctx, site, source, d));
  }
  return out;
}

/** The problems of one argv element, judged with the list it stands in (the words before it). */
function argvProblems(ctx: RuleContext, site: Site, source: string): ExprDiagnostic[] {
  const own = valueAtPointer(ctx.doc, site.argv!.pointer);
  if (!Array.isArray(own)) return [];
  const before = site.argv!.after !== undefined ? valueAtPointer(ctx.doc, site.argv!.after) : [];
  const list = [...(Array.isArray(before) ? before : []), ...own];
  const index = list.length - own.length + Number(site.pointer.slice(site.pointer.lastIndexOf("/") + 1));
  const templates: Template[] = [];
  for (const item of list) {
    const t = typeof item === "string" ? parseTemplate(item).template : undefined;
    if (!t) return []; // a template that does not parse is reported on its own
    templates.push(t);
  }
  if (list[index] !== source) return [];
  return checkArgv(templates, !site.argv!.plain)
    .filter((p) => p.element === index)
    .map((p) => p.diagnostic);
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
