import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { unboundedCycles } from "../../src/pipeline/check-cycles.ts";
import type { PipelineDoc, PhaseSpec } from "../../src/pipeline/spec.ts";

/** A generated phase graph: each phase has some gotos, maybe a `when`, maybe max_visits. */
const graph = fc.integer({ min: 1, max: 7 }).chain((n) =>
  fc.array(
    fc.record({
      gotos: fc.uniqueArray(fc.integer({ min: 0, max: n - 1 }), { maxLength: 3 }),
      unconditional: fc.boolean(),
      when: fc.boolean(),
      bounded: fc.boolean(),
    }),
    { minLength: n, maxLength: n },
  ),
);

function docOf(spec: { gotos: number[]; unconditional: boolean; when: boolean; bounded: boolean }[], bound: Set<string> = new Set()): PipelineDoc {
  const phases: Record<string, PhaseSpec> = {};
  spec.forEach((p, i) => {
    const name = `p${i}`;
    const rules = p.gotos.map((g, k) => ({ ...(p.unconditional && k === p.gotos.length - 1 ? {} : { if: "exit_code == 0" }), goto: `p${g}` }));
    phases[name] = { run: "true", ...(rules.length ? { next: rules } : {}), ...(p.when ? { when: "true" } : {}), ...(p.bounded || bound.has(name) ? { max_visits: 2 } : {}) };
  });
  return { phaseloop: 1, name: "g", phases, stop: { max_iterations: 1 } };
}

/** The graph without the loop head and the bounded phases: its phases and each one's successors among them. */
function openGraph(doc: PipelineDoc): { open: Set<string>; succ: (n: string) => string[] } {
  const names = Object.keys(doc.phases);
  const open = new Set(names.filter((n, i) => i > 0 && doc.phases[n]!.max_visits === undefined));
  const succ = (n: string) => {
    const i = names.indexOf(n);
    const p = doc.phases[n]!;
    const out = new Set<string>();
    const rules = Array.isArray(p.next) ? p.next : [];
    for (const r of rules) if (r.goto) out.add(r.goto);
    const fall = names[i + 1] ?? names[0]!;
    if (!rules.some((r) => r.if === undefined)) out.add(fall);
    if (p.when !== undefined) out.add(fall);
    return [...out].filter((m) => open.has(m));
  };
  return { open, succ };
}

/** The length of the shortest cycle through `start` in the open graph (brute force: breadth-first), or undefined. */
function shortestCycle(doc: PipelineDoc, start: string): number | undefined {
  const { open, succ } = openGraph(doc);
  if (!open.has(start)) return undefined;
  let frontier = [start];
  const seen = new Set<string>();
  for (let length = 1; frontier.length > 0; length++) {
    const further: string[] = [];
    for (const n of frontier) for (const m of succ(n)) {
      if (m === start) return length;
      if (!seen.has(m)) {
        seen.add(m);
        further.push(m);
      }
    }
    frontier = further;
  }
  return undefined;
}

/** Whether the graph without the head and the bounded phases has a cycle (brute force: repeated removal of phases with no way on). */
function hasOpenCycle(doc: PipelineDoc): boolean {
  const { open, succ } = openGraph(doc);
  let changed = true;
  while (changed) {
    changed = false;
    for (const n of [...open]) {
      if (succ(n).length === 0) {
        open.delete(n);
        changed = true;
      }
    }
  }
  return open.size > 0;
}

describe("unbounded cycles", () => {
  it("are found exactly when the graph without the loop head and the bounded phases has a cycle", () => {
    fc.assert(
      fc.property(graph, (spec) => {
        const doc = docOf(spec);
        expect(unboundedCycles(doc).length > 0).toBe(hasOpenCycle(doc));
      }),
      { numRuns: 500 },
    );
  });

  it("bounding the first phase of every reported cycle bounds them all, and each report is a real cycle", () => {
    fc.assert(
      fc.property(graph, (spec) => {
        const doc = docOf(spec);
        const cycles = unboundedCycles(doc);
        for (const c of cycles) {
          expect(c).not.toContain("p0");
          for (const n of c) expect(doc.phases[n]!.max_visits).toBeUndefined();
        }
        const fixed = docOf(spec, new Set(cycles.map((c) => c[0]!)));
        expect(unboundedCycles(fixed)).toEqual([]);
        expect(hasOpenCycle(fixed)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it("the first report is a shortest cycle through the earliest phase that lies on any cycle", () => {
    fc.assert(
      fc.property(graph, (spec) => {
        const doc = docOf(spec);
        const first = Object.keys(doc.phases).find((n) => shortestCycle(doc, n) !== undefined);
        const [reported] = unboundedCycles(doc);
        if (first === undefined) expect(reported).toBeUndefined();
        else {
          expect(reported![0]).toBe(first);
          expect(reported!.length).toBe(shortestCycle(doc, first));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("a long chain of phases with one cycle at its end is reported once", () => {
    const phases: Record<string, PhaseSpec> = {};
    for (let i = 0; i < 3000; i++) phases[`p${i}`] = { run: "true" };
    phases.p2999 = { run: "true", next: [{ if: "exit_code != 0", goto: "p2998" }, { goto: "p0" }] };
    expect(unboundedCycles({ phaseloop: 1, name: "long", phases, stop: { max_iterations: 1 } })).toEqual([["p2998", "p2999"]]);
  });
});
