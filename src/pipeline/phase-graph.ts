/**
 * The phase graph: which phase can follow which (gotos, fall-through in file
 * order, the wrap to the loop head), what is reachable, and whether the loop
 * has a way to stop other than a limit.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { diag, esc, phaseEntries, rulesOf, type RuleContext } from "./rule-context.ts";
import type { PipelineDoc } from "./spec.ts";

/** Edges of the phase graph: explicit gotos, fall-through in file order, wrap-around to the loop head. */
export function phaseSuccessors(doc: PipelineDoc): Map<string, Set<string>> {
  const names = Object.keys(doc.phases ?? {});
  const edges = new Map<string, Set<string>>();
  // members of parallel groups run only with their group: fall-through passes them by
  const members = new Set(Object.values(doc.phases ?? {}).flatMap((p) => (Array.isArray(p?.parallel) ? p.parallel : [])));
  // the phase each one falls through to: the next in file order that is not a member, else the loop head
  const fallsTo: string[] = [];
  for (let i = names.length - 1, after = names[0]!; i >= 0; i--) {
    fallsTo[i] = after;
    if (!members.has(names[i]!)) after = names[i]!;
  }
  names.forEach((name, i) => {
    const phase = doc.phases[name]!;
    const next = new Set<string>();
    if (members.has(name)) return void edges.set(name, next);
    if (Array.isArray(phase?.parallel)) for (const m of phase.parallel) next.add(m);
    const fallThrough = fallsTo[i]!;
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
    for (const m of edges.get(n) ?? []) if (edges.has(m)) stack.push(m);
  }
  return seen;
}

export function checkReachability(ctx: RuleContext): Diagnostic[] {
  const reach = reachablePhases(ctx.doc);
  const out: Diagnostic[] = [];
  for (const [name] of phaseEntries(ctx.doc)) {
    if (!reach.has(name)) {
      out.push(diag(ctx, "UNREACHABLE_PHASE", `/phases/${esc(name)}`, `phase "${name}" can never be reached`, { mode: "key", hint: "no transition leads to it: add a goto, or remove the phase" }));
    }
  }
  return out;
}

export function checkStopPath(ctx: RuleContext): Diagnostic[] {
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
