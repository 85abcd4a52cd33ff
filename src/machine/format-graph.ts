import { limitWords, machineGraph, nextOutsideGroups, type GraphEdge, type GraphNode, type MachineGraph } from "./machine-graph.ts";
import { hookSandbox, phaseSandbox } from "./sandbox-plan.ts";
import { subgraphLines, type Expansion } from "./expand-graph.ts";
import type { Machine } from "./types.ts";

export { joinNodeId, machineGraph, shortLabel } from "./machine-graph.ts";

/** The machine's edges, as `machineGraph` draws them. */
export function machineEdges(machine: Machine): MachineGraph["edges"] {
  return machineGraph(machine).edges;
}

/** Mermaid labels: quoted, with the characters Mermaid reads specially escaped as entities. */
export function mermaidLabel(text: string): string {
  // `#` first: every other escape produces one, and a literal `#35;` must not read as an entity
  const escaped = text
    .replace(/#/g, "#35;")
    .replace(/&/g, "#amp;")
    .replace(/`/g, "#96;")
    .replace(/"/g, "#quot;")
    .replace(/</g, "#lt;")
    .replace(/>/g, "#gt;")
    .replace(/\|/g, "#124;")
    .replace(/[\r\n]+/g, " ");
  return `"${escaped}"`;
}

function mermaidNode(n: GraphNode): string {
  const label = mermaidLabel(n.label.join(" · "));
  switch (n.kind) {
    case "start":
      return `  ${n.id}([${label}])`;
    case "queue":
    case "join":
      return `  ${n.id}{{${label}}}`;
    case "outcome":
      return `  ${n.id}((${label}))`;
    default:
      return `  ${n.id}[${label}]`;
  }
}

function mermaidEdge(e: GraphEdge): string {
  const arrow = e.style === "dashed" ? "-.->" : e.style === "bold" ? "==>" : "-->";
  return e.label ? `  ${e.from} ${arrow}|${mermaidLabel(e.label)}| ${e.to}` : `  ${e.from} ${arrow} ${e.to}`;
}

/** A Mermaid flowchart of the machine; with `expand`, each sub-pipeline opens into a subgraph of its phases. */
export function formatMermaid(machine: Machine, expand?: Expansion): string {
  const graph = machineGraph(machine);
  const lines = ["flowchart TD", ...graph.nodes.map(mermaidNode)];
  for (const e of graph.edges) lines.push(mermaidEdge(e));
  lines.push(...subgraphLines(machine, expand, { open: (id, title) => `  subgraph ${id}[${mermaidLabel(title)}]`, close: () => "  end", node: mermaidNode, edge: mermaidEdge }));
  const outcomes = graph.nodes.filter((n) => n.kind === "outcome").map((n) => n.id);
  const head = graph.nodes.find((n) => n.head);
  lines.push("  classDef outcome fill:#eee,stroke:#555");
  if (outcomes.length) lines.push(`  class ${outcomes.join(",")} outcome`);
  if (head) lines.push("  classDef head stroke-width:3px", `  class ${head.id} head`);
  return lines.join("\n") + "\n";
}

const dotQuote = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

const DOT_SHAPES: Record<GraphNode["kind"], string> = {
  start: "shape=circle, label=\"\", width=0.2, style=filled, fillcolor=black",
  phase: "shape=box, style=rounded",
  queue: "shape=hexagon",
  join: "shape=diamond",
  outcome: "shape=doublecircle",
};

function dotNode(n: GraphNode): string {
  const label = n.kind === "start" ? "" : `, label=${dotQuote(n.label.join("\n"))}`;
  return `  ${n.id} [${DOT_SHAPES[n.kind]}${label}${n.head ? ", penwidth=2" : ""}];`;
}

function dotEdge(e: GraphEdge): string {
  const attrs = [`label=${dotQuote(e.label)}`];
  if (e.title) attrs.push(`tooltip=${dotQuote(e.title)}`);
  if (e.style !== "solid") attrs.push(`style=${e.style}`);
  return `  ${e.from} -> ${e.to} [${attrs.join(", ")}];`;
}

/** A Graphviz DOT digraph of the machine: the same nodes and edges as the Mermaid drawing (sub-pipelines as clusters with `expand`). */
export function formatDot(machine: Machine, expand?: Expansion): string {
  const graph = machineGraph(machine);
  const lines = [`digraph ${dotQuote(machine.name)} {`, "  rankdir=TB;", ...graph.nodes.map(dotNode), ...graph.edges.map(dotEdge)];
  lines.push(...subgraphLines(machine, expand, { open: (id, title) => `  subgraph cluster_${id} { label=${dotQuote(title)};`, close: () => "  }", node: dotNode, edge: dotEdge }));
  lines.push("}");
  return lines.join("\n") + "\n";
}

/** A phase's timeouts and retries, only where they apply: a question waits (or not), a group's members retry on their own, a sub-pipeline has its own limits. */
function limitsOf(p: Machine["phases"][number]): string {
  const retry = p.retry.maxAttempts > 1 ? `; retry ${p.retry.maxAttempts} attempts on ${p.retry.on.join(", ")}` : "; no retry";
  if (p.kind === "ask") return p.timeoutMs > 0 ? `; waits at most ${Math.round(p.timeoutMs / 1000)}s` : "; waits as long as it takes";
  if (p.kind === "group") return "";
  if (p.kind === "pipeline") return retry;
  return `; timeout ${Math.round(p.timeoutMs / 1000)}s${p.idleTimeoutMs ? `, idle ${Math.round(p.idleTimeoutMs / 1000)}s` : ""}${retry}`;
}

/** The machine in words, for `run --dry-run`. */
export function describeMachine(machine: Machine): string {
  const out: string[] = [`pipeline ${machine.name}${machine.description ? `: ${machine.description}` : ""}`, ""];
  out.push(`loop head: ${machine.head} (entering it starts a new iteration)`);
  out.push(`limits: ${limitWords(machine).join(", ")}`);
  if (machine.tasks) {
    const t = machine.tasks;
    out.push(`tasks: ${t.source.kind === "glob" ? `markdown files ${t.source.glob}` : `${t.source.file}${t.source.pointer}`}, order ${t.order}, at most ${typeof t.maxAttempts === "number" ? t.maxAttempts : "param"} attempts each${t.finalGate ? `, final gate ${t.finalGate}` : ""}`);
  }
  out.push("", "phases:");
  for (const p of machine.phases) {
    out.push(`  ${p.index + 1}. ${p.name} — ${p.kind === "agent" ? `agent ${p.agent}${p.tools ? ` with tools ${p.tools}` : ""}, prompt ${p.promptSource}` : p.kind === "ask" ? "asks a person" : p.kind === "pipeline" ? `runs the pipeline ${p.pipeline}` : p.kind === "group" ? "a parallel group" : "command"}${limitsOf(p)}`);
    if (p.kind === "group") out.push(`     runs ${(p.members ?? []).join(", ")} at once; succeeded per join ${p.join}`);
    if (p.memberOf) out.push(`     runs only in group ${p.memberOf}`);
    const sandbox = phaseSandbox(machine, p);
    if (p.kind === "agent" || p.kind === "run") out.push(`     OS sandbox: ${sandbox.mode}${sandbox.pointer ? ` (${sandbox.pointer.slice(1).replaceAll("/", ".")})` : " (the default)"}${sandbox.mode === "off" ? ": runs with your rights" : ""}`);
    if (p.whenText) out.push(`     runs only when ${p.whenText}`);
    if (p.exhausted) out.push(`     at most ${p.maxVisits} visit${p.maxVisits === 1 ? "" : "s"} per iteration, then ${p.exhausted.goto ? `go to ${p.exhausted.goto}` : `stop: ${p.exhausted.stop}`}`);
    if (p.memberOf) continue;
    const fall = nextOutsideGroups(machine, p.index)?.name ?? `${machine.head} (next iteration)`;
    for (const r of p.rules) {
      const target = r.goto ? `go to ${r.goto === machine.head ? `${r.goto} (next iteration)` : r.goto}` : `stop: ${r.stop}`;
      out.push(`     ${r.ifText ? `if ${r.ifText}` : "otherwise"} → ${target}${r.task ? `, task ${r.task}` : ""}`);
    }
    if (p.rules.length === 0 || p.rules.every((r) => r.if)) out.push(`     ${p.rules.length ? "otherwise" : "then"} → ${fall}`);
  }
  if (machine.stopRules.length) {
    out.push("", "stop rules (after every phase):");
    for (const r of machine.stopRules) out.push(`  if ${r.ifText} → ${r.outcome}`);
  }
  const hooks = Object.keys(machine.hooks);
  if (hooks.length) out.push("", `hooks: ${hooks.map((name) => `${name} (OS sandbox: ${hookSandbox(machine, machine.hooks[name as keyof typeof machine.hooks]!).mode})`).join(", ")}`);
  return out.join("\n") + "\n";
}
