/// <reference lib="dom" />
/**
 * The compiled loop as a graph with the path taken: how often each phase ran
 * and each edge was followed, where the run stands now (pulsing), and the
 * outcome it stopped at with its reason. Laid out once per graph; a change in
 * the run only updates classes and counts.
 */
import type { RunGraph } from "../ui/run-graph.ts";
import type { RunView } from "../ui/run-view.ts";
import { clear, h, s } from "./dom.ts";
import { layoutGraph, type Layout } from "./graph-layout.ts";

export interface GraphView {
  el: HTMLElement;
  update(view: RunView, state: string, inflight?: string[]): void;
}

const OUTCOMES = new Set(["complete", "blocked", "failed", "stopped"]);

export function graphView(graph: RunGraph, onPhase: (phase: string) => void): GraphView {
  const layout: Layout = layoutGraph(graph.nodes, graph.edges);
  const byNode = new Map<string, string>(Object.entries(graph.ids).map(([phase, id]) => [id, phase]));
  const svg = s("svg", { class: "graph", viewBox: `0 0 ${layout.width} ${layout.height}`, width: layout.width, height: layout.height, role: "img", "aria-label": "the loop's graph" });
  const defs = s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" })));
  svg.append(defs);
  const edgeEls: { from: string; to: string; path: SVGPathElement; label: SVGTextElement; base: string }[] = [];
  const laid = new Map(layout.edges.map((l) => [l.i, l]));
  graph.edges.forEach((e, i) => {
    const l = laid.get(i);
    if (!l) return;
    const path = s("path", { d: l.d, class: `edge ${e.style}${l.back ? " back" : ""}`, "marker-end": "url(#arrow)", "data-i": String(i) });
    path.append(s("title", {}, e.title ?? e.label));
    const label = s("text", { x: l.lx, y: l.ly, class: "edge-label", "text-anchor": l.back ? "end" : "middle" }, e.label);
    svg.append(path, label);
    edgeEls.push({ from: e.from, to: e.to, path, label, base: e.label });
  });
  const nodeEls = new Map<string, { g: SVGGElement; count: SVGTextElement }>();
  for (const n of graph.nodes) {
    const box = layout.nodes.get(n.id);
    if (!box) continue;
    const phase = byNode.get(n.id);
    const g = s("g", { class: `node kind-${n.kind}${n.head ? " head" : ""}`, transform: `translate(${box.x},${box.y})`, "data-node": n.id, ...(phase ? { "data-phase": phase } : {}) });
    g.append(s("rect", { width: box.w, height: box.h, rx: n.kind === "outcome" || n.kind === "start" ? box.h / 2 : 6 }));
    box.lines.slice(0, 2).forEach((line, i) => g.append(s("text", { x: 10, y: 18 + i * 15, class: i === 0 ? "name" : "detail" }, line.length > 40 ? `${line.slice(0, 39)}…` : line)));
    if (box.lines.length > 0) g.append(s("title", {}, box.lines.join("\n")));
    const count = s("text", { x: box.w - 6, y: -4, class: "count", "text-anchor": "end" }, "");
    g.append(count);
    if (phase) g.addEventListener("click", () => onPhase(phase));
    svg.append(g);
    nodeEls.set(n.id, { g, count });
  }
  const note = h("p", { class: "graph-note" });
  const el = h("div", { class: "graph-wrap" }, graph.fallback ? h("p", { class: "warn" }, `Only the phases in order are drawn: ${graph.fallback}.`) : null, svg, note);

  function nodeIdsOf(phase: string): string[] {
    const id = graph.ids[phase];
    return id === undefined ? [phase] : [id, `j_${id.slice(2)}`];
  }

  function update(view: RunView, state: string, inflight: string[] = []): void {
    // counts of transitions map onto the graph's edges: from a phase (or its group's join) to a phase, the queue or an outcome
    const taken = new Map<number, number>();
    for (const [key, n] of Object.entries(view.edges)) {
      const [from, to] = key.split(">") as [string, string];
      const froms = nodeIdsOf(from);
      const tos = OUTCOMES.has(to) ? [to] : [...nodeIdsOf(to), "queue"];
      const i = edgeEls.findIndex((e) => froms.includes(e.from) && tos.includes(e.to));
      if (i >= 0) taken.set(i, (taken.get(i) ?? 0) + n);
    }
    const first = view.runs.find((r) => r.group === null);
    if (first) {
      const i = edgeEls.findIndex((e) => e.from === "start");
      if (i >= 0) taken.set(i, 1);
      // a task queue starts every iteration (of every lane) at the head
      const q = edgeEls.findIndex((e) => e.from === "queue" && nodeIdsOf(first.phase).includes(e.to));
      if (q >= 0) taken.set(q, Math.max(taken.get(q) ?? 0, view.rows.length));
    }
    const end = view.summary.finished?.outcome;
    if (end !== undefined) {
      // a queue decides when tasks are done or blocked: the run ended there, not at its last phase
      const fromQueue = edgeEls.findIndex((e) => e.from === "queue" && e.to === end);
      if (fromQueue >= 0 && ["tasks_done", "tasks_blocked"].includes(view.summary.finished?.reason.code ?? "")) taken.set(fromQueue, 1);
    }
    // a group's fork to its members and their join: taken as often as the member ran
    edgeEls.forEach((e, i) => {
      if (taken.has(i)) return;
      const member = byNode.get(e.to) ?? byNode.get(e.from);
      const group = member === undefined ? undefined : graph.nodes.find((n) => n.id === e.from || n.id === e.to);
      if (member !== undefined && group !== undefined && (e.from.startsWith("p_") && e.to.startsWith("p_") ? graph.edges[i]?.style === "bold" : e.to.startsWith("j_"))) {
        const v = view.visits[member] ?? 0;
        if (v > 0) taken.set(i, v);
      }
    });
    edgeEls.forEach((e, i) => {
      const n = taken.get(i) ?? 0;
      e.path.classList.toggle("taken", n > 0);
      e.path.style.strokeWidth = n > 0 ? String(Math.min(5, 1.6 + Math.log10(n + 1) * 1.5)) : "";
      // a limit or skip never taken keeps its words for the tooltip: the drawing stays readable
      const dashed = e.path.classList.contains("dashed");
      e.label.textContent = n > 0 ? `${dashed ? "" : e.base}${e.base && !dashed ? " " : ""}×${n}` : dashed ? "" : e.base;
    });
    const running = new Set([...view.runs.filter((r) => r.status === "running").map((r) => r.phase), ...inflight]);
    const lastFailed = new Set<string>();
    for (const [id, { g, count }] of nodeEls) {
      const phase = byNode.get(id);
      const visits = phase ? (view.visits[phase] ?? 0) : 0;
      g.classList.toggle("visited", visits > 0 || (id === "start" && view.runs.length > 0));
      g.classList.toggle("current", phase !== undefined && running.has(phase));
      g.classList.toggle("waiting", phase !== undefined && view.summary.question?.phase === phase && view.summary.finished === null);
      g.classList.toggle("interrupted", phase !== undefined && !running.size && view.summary.finished === null && view.summary.phase === phase);
      g.classList.toggle("reached", OUTCOMES.has(id) && view.summary.finished?.outcome === id);
      count.textContent = visits > 0 ? `×${visits}` : "";
      if (phase && view.summary.last_error?.phase === phase) lastFailed.add(id);
      g.classList.toggle("failed-here", lastFailed.has(id));
    }
    const f = view.summary.finished;
    clear(note);
    if (f) note.append(`Stopped at ${f.outcome}: ${f.reason.message || f.reason.code} (${f.reason.code}).`);
    else if (state === "awaiting answer" && view.summary.question) note.append(`Waiting at ${view.summary.question.phase} for an answer.`);
    else if (inflight.length > 0) note.append(`Running ${inflight.join(", ")}.`);
    else if (view.summary.phase) note.append(`${state === "running" ? "Running" : "Stood"} at ${view.summary.phase}, iteration ${view.summary.iteration}.`);
  }

  return { el, update };
}
