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

const cycleCache = new WeakMap<PipelineDoc, string[][]>();

/**
 * Cycles that avoid the loop head and every phase with `max_visits`, one per phase that would
 * bound it. Found once per document: validation, the run's implicit bounds and migrate ask
 * the same question of the document as it was read.
 */
export function unboundedCycles(doc: PipelineDoc): string[][] {
  let found = cycleCache.get(doc);
  if (!found) cycleCache.set(doc, (found = findUnboundedCycles(doc)));
  return found;
}

function findUnboundedCycles(doc: PipelineDoc): string[][] {
  const names = Object.keys(doc.phases ?? {});
  if (names.length === 0) return [];
  const edges = phaseSuccessors(doc);
  const bounded = new Set<string>([names[0]!]);
  for (const [name, phase] of Object.entries(doc.phases)) if (typeof phase?.max_visits === "number") bounded.add(name);
  const order = new Map(names.map((n, i) => [n, i]));
  const next = new Map<string, string[]>();
  for (const n of names) if (!bounded.has(n)) next.set(n, [...(edges.get(n) ?? [])].filter((m) => order.has(m) && !bounded.has(m)).sort((a, b) => order.get(a)! - order.get(b)!));
  // Report the shortest cycle through the earliest phase on any cycle, count that phase as
  // bounded, look again. Bounding a phase only splits its own strongly connected component,
  // so each component is looked at again alone: disjoint cycles cost one pass in all, not
  // one pass each. The phases reported come in file order, as one global search gives them.
  const found: string[][] = [];
  const work: string[][] = [names.filter((n) => next.has(n))];
  while (work.length > 0) {
    const nodes = work.pop()!;
    const inside = new Set(nodes);
    const within = (n: string) => next.get(n)!.filter((m) => inside.has(m));
    const component = components(nodes, new Map(nodes.map((n) => [n, within(n)])));
    const members = new Map<number, string[]>();
    for (const n of nodes) {
      const c = component.get(n)!;
      const list = members.get(c);
      if (list) list.push(n);
      else members.set(c, [n]);
    }
    for (const group of members.values()) {
      const start = group.reduce((a, b) => (order.get(a)! <= order.get(b)! ? a : b));
      const cycle = group.length > 1 || within(start).includes(start) ? shortestCycle(start, group, within) : undefined;
      if (!cycle) continue;
      found.push(cycle);
      // the earliest phase of a component with a cycle lies on one (a component is strongly connected)
      const rest = group.filter((n) => n !== start);
      if (rest.length > 0) work.push(rest);
    }
  }
  return found.sort((a, b) => order.get(a[0]!)! - order.get(b[0]!)!);
}

/** The shortest cycle from `start` back to it, breadth-first inside its component (nothing outside leads back). */
function shortestCycle(start: string, group: string[], within: (n: string) => string[]): string[] | undefined {
  const member = new Set(group);
  const parent = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const n = queue[i]!;
    for (const m of within(n)) {
      if (m === start) {
        const path = [n];
        while (path[path.length - 1] !== start) path.push(parent.get(path[path.length - 1]!)!);
        return path.reverse();
      }
      if (member.has(m) && !parent.has(m)) {
        parent.set(m, n);
        queue.push(m);
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
