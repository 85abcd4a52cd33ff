/**
 * The params a pipeline runs as code: `[sh, -c, "{{ params.check }}"]`, a
 * param as the program of a command, an interpreter's program. The user's
 * own params may be code; a parent pipeline that fills one from data (a
 * phase's output, a task) would make that data code, so `load-sub-pipelines`
 * refuses it. Pure.
 */
import { argvRoles, parseTemplate, shellContexts, type Expr, type Template } from "../expr/index.ts";
import type { PipelineDoc } from "./spec.ts";

const paramOf = (e: Expr): string | undefined => (e.kind === "member" && e.object.kind === "ident" && e.object.name === "params" ? e.property : undefined);

function fromShell(t: Template, out: Map<string, string>, where: string): void {
  const r = shellContexts(t);
  if (!r.ok) return;
  const exprs = t.parts.filter((p) => p.kind === "expr");
  exprs.forEach((p, k) => {
    const name = paramOf(p.expr);
    if (name !== undefined && (r.roles?.[k] ?? "data") !== "data" && !out.has(name)) out.set(name, where);
  });
}

function fromArgv(list: unknown, out: Map<string, string>, where: string): void {
  if (!Array.isArray(list) || list.some((x) => typeof x !== "string")) return;
  const templates = (list as string[]).map((x) => parseTemplate(x).template);
  if (templates.some((t) => !t)) return;
  argvRoles(templates as Template[]).forEach((role, i) => {
    const t = templates[i]!;
    if (role === "script") fromShell(t, out, `${where}/${i}`);
    else if (role === "program") for (const p of t.parts) if (p.kind === "expr" && paramOf(p.expr) !== undefined && !out.has(paramOf(p.expr)!)) out.set(paramOf(p.expr)!, `${where}/${i}`);
  });
}

/** Param name → the pointer of the first place that runs it as code. */
export function paramsRunAsCode(doc: PipelineDoc): Map<string, string> {
  const out = new Map<string, string>();
  const shell = (text: unknown, where: string) => {
    if (typeof text !== "string") return;
    const t = parseTemplate(text).template;
    if (t) fromShell(t, out, where);
  };
  for (const [name, phase] of Object.entries(doc.phases ?? {})) {
    const run = (phase as { run?: unknown } | undefined)?.run;
    if (typeof run === "string") shell(run, `/phases/${name}/run`);
    else fromArgv(run, out, `/phases/${name}/run`);
  }
  for (const [name, hook] of Object.entries(doc.hooks ?? {})) {
    const run = hook && typeof hook === "object" && !Array.isArray(hook) ? (hook as { run?: unknown }).run : hook;
    if (typeof run === "string") shell(run, `/hooks/${name}`);
    else fromArgv(run, out, `/hooks/${name}`);
  }
  for (const [name, agent] of Object.entries(doc.agents ?? {})) fromArgv([...(agent?.command ?? []), ...(agent?.args ?? [])], out, `/agents/${name}/command`);
  for (const [name, server] of Object.entries(doc.mcp ?? {})) fromArgv((server as { command?: unknown } | undefined)?.command, out, `/mcp/${name}/command`);
  return out;
}
