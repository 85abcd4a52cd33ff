/**
 * `graph --expand`: each sub-pipeline phase opens into a subgraph of its
 * child's own machine (its phases, rules and outcomes, ids prefixed by the
 * phase's node), joined to the phase's node by a dashed "runs" arrow; nested
 * sub-pipelines open in turn. Pure: the children come in compiled.
 */
import { machineGraph, phaseNodeId, type GraphEdge, type GraphNode } from "./machine-graph.ts";
import type { Machine } from "./types.ts";

/** Compiled children by the phase that runs them, with theirs. */
export interface Expansion {
  [phase: string]: { machine: Machine; children?: Expansion };
}

export interface SubgraphRenderer {
  open(id: string, title: string): string;
  close(): string;
  node(n: GraphNode): string;
  edge(e: GraphEdge): string;
}

/** The lines that draw `machine`'s sub-pipelines as subgraphs (none without an expansion). */
export function subgraphLines(machine: Machine, expand: Expansion | undefined, render: SubgraphRenderer, prefix = ""): string[] {
  const out: string[] = [];
  for (const p of machine.phases) {
    const child = p.kind === "pipeline" ? expand?.[p.name] : undefined;
    if (!child) continue;
    const owner = `${prefix}${phaseNodeId(p.name)}`;
    const inner = `${owner}__`;
    const graph = machineGraph(child.machine);
    out.push(render.open(`${inner}sub`, `${p.name}: ${child.machine.name}`));
    for (const n of graph.nodes) out.push(render.node({ ...n, id: `${inner}${n.id}`, head: false }));
    for (const e of graph.edges) out.push(render.edge({ ...e, from: `${inner}${e.from}`, to: `${inner}${e.to}` }));
    out.push(...subgraphLines(child.machine, child.children, render, inner));
    out.push(render.close());
    out.push(render.edge({ from: owner, to: `${inner}start`, label: "runs", style: "dashed" }));
  }
  return out;
}
