/**
 * Every cycle of the phase graph must be bounded. `max_iterations` is counted
 * at the loop head only, so a cycle that can repeat without passing through
 * the head (`fix → test → fix`, `implement → implement`) needs `max_visits`
 * on one of its phases, or nothing but `max_duration` or a breaker ends it.
 * Format 1 accepted such cycles when it was first published, so a file that
 * has one still validates: the finding is a warning, and the run bounds the
 * cycle itself (see compat-v1.ts); `phaseloop migrate` writes the bound down.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { PipelineDoc } from "./spec.ts";
import { phaseSuccessors } from "./phase-graph.ts";
import { diag, esc, rulesOf, type RuleContext } from "./rule-context.ts";

/** Visits per iteration a phase of an unbounded cycle gets when its file sets none. */
export const IMPLICIT_MAX_VISITS = 10;

/** Cycles that avoid the loop head and every phase with `max_visits`, one per phase that would bound it. */
export function unboundedCycles(doc: PipelineDoc): string[][] {
  const names = Object.keys(doc.phases ?? {});
  if (names.length === 0) return [];
  const edges = phaseSuccessors(doc);
  const bounded = new Set<string>([names[0]!]);
  for (const [name, phase] of Object.entries(doc.phases)) if (typeof phase?.max_visits === "number") bounded.add(name);
  const order = new Map(names.map((n, i) => [n, i]));
  const found: string[][] = [];
  // report a cycle, count its first phase as bounded, look again: the phases named bound them all
  for (;;) {
    const cycle = firstCycle(names, edges, bounded, order);
    if (!cycle) return found;
    found.push(cycle);
    bounded.add(cycle[0]!);
  }
}

/** The shortest cycle through the earliest phase (in file order) that lies on any cycle of the unbounded phases. */
function firstCycle(names: string[], edges: Map<string, Set<string>>, bounded: Set<string>, order: Map<string, number>): string[] | undefined {
  const next = new Map<string, string[]>();
  for (const n of names) if (!bounded.has(n)) next.set(n, [...(edges.get(n) ?? [])].filter((m) => order.has(m) && !bounded.has(m)).sort((a, b) => order.get(a)! - order.get(b)!));
  // a phase is on a cycle only with others of its strongly connected component, or by an edge to itself
  const component = components(names.filter((n) => next.has(n)), next);
  const size = new Map<number, number>();
  for (const c of component.values()) size.set(c, (size.get(c) ?? 0) + 1);
  for (const start of names) {
    const own = component.get(start);
    if (own === undefined || (size.get(own) === 1 && !next.get(start)!.includes(start))) continue;
    // breadth-first from start back to start, inside its component (nothing outside leads back)
    const parent = new Map<string, string>();
    const queue = [start];
    for (let i = 0; i < queue.length; i++) {
      const n = queue[i]!;
      for (const m of next.get(n)!) {
        if (m === start) {
          const path = [n];
          while (path[0] !== start) path.unshift(parent.get(path[0]!)!);
          return path;
        }
        if (component.get(m) === own && !parent.has(m)) {
          parent.set(m, n);
          queue.push(m);
        }
      }
    }
  }
  return undefined;
}

/** Tarjan's strongly connected components, without recursion (a pipeline may have thousands of phases): each node's component number. */
function components(nodes: string[], next: Map<string, string[]>): Map<string, number> {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const component = new Map<string, number>();
  let counter = 0;
  let found = 0;
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: [string, number][] = [[root, 0]];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const [n, i] = frame;
      const out = next.get(n)!;
      if (i < out.length) {
        frame[1]++;
        const m = out[i]!;
        if (!index.has(m)) {
          index.set(m, counter);
          low.set(m, counter++);
          stack.push(m);
          onStack.add(m);
          work.push([m, 0]);
        } else if (onStack.has(m)) low.set(n, Math.min(low.get(n)!, index.get(m)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const up = work[work.length - 1]![0];
        low.set(up, Math.min(low.get(up)!, low.get(n)!));
      }
      if (low.get(n) === index.get(n)) {
        for (;;) {
          const m = stack.pop()!;
          onStack.delete(m);
          component.set(m, found);
          if (m === n) break;
        }
        found++;
      }
    }
  }
  return component;
}

export function checkCycles(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const head = Object.keys(doc.phases ?? {})[0];
  return unboundedCycles(doc).map((cycle) => {
    const first = cycle[0]!;
    const last = cycle[cycle.length - 1]!;
    const shown = [...cycle, first].map((n) => `"${n}"`).join(" → ");
    const pointer = edgePointer(doc, last, first);
    return {
      ...diag(ctx, "UNBOUNDED_CYCLE", pointer.pointer, `the cycle ${shown} can repeat without passing through the loop head "${head}", and no phase on it has max_visits: the run stops blocked after ${IMPLICIT_MAX_VISITS} visits of "${first}" in one iteration`, {
        mode: pointer.mode,
        hint: `bound it yourself: give "${first}" \`max_visits: ${IMPLICIT_MAX_VISITS}\` and \`exhausted: { stop: blocked }\` (or \`exhausted: { goto: PHASE }\`), or route the cycle through "${head}"; \`phaseloop migrate FILE --write\` writes the bound the run applies`,
      }),
      severity: "warning" as const,
    };
  });
}

/** Where the edge from `from` to `to` is written: the rule's goto, the `next` string, or the phase itself (fall-through). */
function edgePointer(doc: PipelineDoc, from: string, to: string): { pointer: string; mode: "key" | "value" } {
  const phase = doc.phases[from]!;
  const base = `/phases/${esc(from)}`;
  if (typeof phase.next === "string" && phase.next === to) return { pointer: `${base}/next`, mode: "value" };
  const i = rulesOf(phase).findIndex((r) => r.goto === to);
  if (Array.isArray(phase.next) && i >= 0) return { pointer: `${base}/next/${i}/goto`, mode: "value" };
  if (phase.exhausted?.goto === to) return { pointer: `${base}/exhausted/goto`, mode: "value" };
  return { pointer: base, mode: "key" };
}
