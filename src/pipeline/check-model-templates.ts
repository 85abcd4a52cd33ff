/**
 * A phase's `model` and an agent's `model` are templates (`model: "{{ params.model }}"`),
 * rendered when the phase starts, like its prompt: each is parsed and checked against
 * what a phase's input may read, and the params it names count as used.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { checkTemplate, parseTemplate, templateReferences, type ExprDiagnostic } from "../expr/index.ts";
import { buildScope } from "./context-scope.ts";
import { nodeAtPointer, valueOffsetMapper } from "./parse-pipeline-text.ts";
import { diag, esc, phaseEntries, type RuleContext } from "./rule-context.ts";

export function checkModelTemplates(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  const check = (model: unknown, pointer: string, phase?: string) => {
    if (typeof model !== "string" || !model.includes("{{")) return;
    const parsed = parseTemplate(model);
    const found: ExprDiagnostic[] = [...parsed.diagnostics];
    if (parsed.template) {
      found.push(...checkTemplate(parsed.template, buildScope(ctx.doc, "phase-input", phase)));
      for (const r of templateReferences(parsed.template)) if (r.path[0] === "params" && r.path[1] !== undefined) ctx.usedParams.add(r.path[1]);
    }
    const map = valueOffsetMapper(ctx.text, nodeAtPointer(ctx.document, pointer).node);
    for (const d of found) {
      const located = diag(ctx, d.code, pointer, d.message, d.hint ? { hint: d.hint } : {});
      if (map) Object.assign(located, { start: map(d.start), end: map(Math.max(d.start, d.end)) });
      out.push(located);
    }
  };
  for (const [name, agent] of Object.entries(ctx.doc.agents ?? {})) check(agent?.model, `/agents/${esc(name)}/model`);
  for (const [name, phase] of phaseEntries(ctx.doc)) check(phase.model, `/phases/${esc(name)}/model`, name);
  return out;
}
