/**
 * The machine as a graph of nodes and edges, the one model `graph` draws as
 * Mermaid and as DOT (so both show the same nodes and edges): every phase,
 * every way control leaves it (rules, fall-through, skips, visit limits),
 * for task queues the queue itself (next task, all done → final gate, tasks
 * blocked) and how a task is marked, and the limits and stop rules that can
 * end a run at an iteration's boundary. Pure.
 */
import { phaseSandbox } from "./sandbox-plan.ts";
import type { CompiledPhase, Machine } from "./types.ts";

export type GraphNodeKind = "start" | "phase" | "queue" | "join" | "outcome";

export interface GraphNode {
  id: string;
  kind: GraphNodeKind;
  /** First line: the name; further lines: details. */
  label: string[];
  /** The loop head (drawn bolder). */
  head?: boolean;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** Short: a rule's `label`, or its condition shortened. */
  label: string;
  /** The whole condition, when the label shortens it. */
  title?: string;
  /** dashed: a skip, a limit or a stop rule; bold: a parallel group's fork to its members and their join. */
  style: "solid" | "dashed" | "bold";
}

export interface MachineGraph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

const OUTCOMES = ["complete", "blocked", "failed", "stopped"] as const;

/** Longest label drawn in full; longer conditions are cut at a word. */
export const LABEL_MAX = 32;

/** A condition short enough to read on an arrow: cut at a word boundary, with an ellipsis. */
export function shortLabel(text: string, max = LABEL_MAX): string {
  const one = text.replace(/\s+/g, " ").trim();
  if (one.length <= max) return one;
  const cut = one.slice(0, max - 1);
  const at = cut.search(/\s\S*$/);
  return `${(at > max / 2 ? cut.slice(0, at) : cut).trimEnd()}…`;
}

export const phaseNodeId = (name: string): string => `p_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
/** The node a parallel group's members join at; the group's rules leave from it. */
export const joinNodeId = (group: string): string => `j_${group.replace(/[^A-Za-z0-9_]/g, "_")}`;
const outcomeId = (o: string): string => o;
const QUEUE = "queue";

/** The machine's limits in words: "max_iterations 5", "no_progress 3", … */
export function limitWords(machine: Machine): string[] {
  const l = machine.limits;
  const show = (v: unknown) => (typeof v === "number" ? String(v) : "param");
  const out = [`max_iterations ${show(l.maxIterations)}`];
  if (l.maxDurationMs !== null) out.push(`max_duration ${Math.round(l.maxDurationMs / 1000)}s`);
  if (l.noProgress !== null) out.push(`no_progress ${show(l.noProgress)}`);
  if (l.consecutiveFailures !== null) out.push(`consecutive_failures ${show(l.consecutiveFailures)}`);
  if (l.budgetTokens !== null) out.push(`tokens ${l.budgetTokens}`);
  if (l.budgetCostUsd !== null) out.push(`cost $${l.budgetCostUsd}`);
  return out;
}

export function machineGraph(machine: Machine): MachineGraph {
  const edges: GraphEdge[] = [];
  const tasks = machine.tasks;
  const gate = tasks?.finalGate ?? null;
  /** Entering the loop head starts an iteration: with a queue, that is where the next task is picked. */
  const entry = (name: string): string => (tasks && name === machine.head ? QUEUE : phaseNodeId(name));
  /** Edges of the queue and the gate, which say what the machine does, not what a rule says: never joined. */
  const fixed = new WeakSet<GraphEdge>();
  const add = (from: string, to: string, text: string, style: GraphEdge["style"] = "solid", label?: string, keep = false): void => {
    const short = label ?? shortLabel(text);
    // each rule is an arrow of its own, even beside another to the same place (a conditional
    // rule and the fall-back after it are two ways there): only the very same arrow is drawn once
    if (!keep && edges.some((e) => e.from === from && e.to === to && e.style === style && !fixed.has(e) && e.label === short && (e.title ?? "") === (short !== text.trim() ? text.trim() : ""))) return;
    const edge: GraphEdge = { from, to, label: short, style, ...(short !== text.trim() && text.trim() !== "" ? { title: text.trim() } : {}) };
    if (keep) fixed.add(edge);
    edges.push(edge);
  };

  add("start", tasks ? QUEUE : phaseNodeId(machine.head), "");
  if (tasks) {
    add(QUEUE, phaseNodeId(machine.head), "next task");
    if (gate) add(QUEUE, phaseNodeId(gate), "all tasks done");
    else add(QUEUE, outcomeId("complete"), "all tasks done");
    add(QUEUE, outcomeId("blocked"), "no task can go on (blocked)");
  }
  // the final gate, run by the queue, ends the run or reopens a task whatever its own rules say;
  // they apply only where another phase leads to it as to any phase
  const gateReached = gate !== null && machine.phases.some((p) => p.name !== gate && (p.rules.some((r) => r.goto === gate) || (machine.phases[p.index + 1]?.name === gate && (p.rules.length === 0 || p.rules.every((r) => r.if))) || p.exhausted?.goto === gate));
  for (const p of machine.phases) {
    // a member runs only in its group: it forks from the group and joins back
    if (p.memberOf !== undefined) {
      add(phaseNodeId(p.memberOf), phaseNodeId(p.name), "", "bold", undefined, true);
      add(phaseNodeId(p.name), joinNodeId(p.memberOf), "", "bold", undefined, true);
      continue;
    }
    const from = p.kind === "group" ? joinNodeId(p.name) : phaseNodeId(p.name);
    if (gate === p.name) {
      add(from, outcomeId("complete"), "gate passes", "solid", undefined, true);
      add(from, QUEUE, "gate fails: last task reopened", "solid", undefined, true);
      add(from, outcomeId("failed"), "gate fails, no task to reopen", "solid", undefined, true);
      if (!gateReached) continue;
    }
    const fall = nextOutsideGroups(machine, p.index)?.name ?? machine.head;
    for (const [i, r] of p.rules.entries()) {
      const task = r.task ? `task ${r.task}` : "";
      // the unconditional fall-back after conditional rules says so; a lone rule always holds
      const cond = r.ifText ?? (i === 0 ? "" : "otherwise");
      const written = r.label;
      const text = [cond, task].filter(Boolean).join(" · ");
      const label = written !== undefined ? [written, task].filter(Boolean).join(" · ") : [cond ? shortLabel(cond) : "", task].filter(Boolean).join(" · ");
      if (r.goto) add(from, entry(r.goto), text, "solid", label);
      else if (r.stop) add(from, outcomeId(r.stop), text, "solid", label);
    }
    if (p.rules.length === 0 || p.rules.every((r) => r.if)) add(from, entry(fall), p.rules.length ? "otherwise" : "");
    if (p.when) add(phaseNodeId(p.name), entry(fall), `skipped unless ${p.whenText}`, "dashed");
    if (p.exhausted) add(phaseNodeId(p.name), p.exhausted.goto ? entry(p.exhausted.goto) : outcomeId(p.exhausted.stop!), `after ${p.maxVisits} visit${p.maxVisits === 1 ? "" : "s"}`, "dashed");
  }
  // what ends a run between phases: the limits and breakers, and the stop rules
  const boundary = tasks ? QUEUE : phaseNodeId(machine.head);
  add(boundary, outcomeId("stopped"), `limits: ${limitWords(machine).join(", ")}`, "dashed", limitWords(machine).join(" · "));
  for (const r of machine.stopRules) add(boundary, outcomeId(r.outcome), `stop.when ${r.ifText}`, "dashed");

  const nodes: GraphNode[] = [{ id: "start", kind: "start", label: ["start"] }];
  if (tasks) {
    const attempts = typeof tasks.maxAttempts === "number" ? String(tasks.maxAttempts) : "max_attempts";
    nodes.push({ id: QUEUE, kind: "queue", label: ["task queue", tasks.source.kind === "glob" ? tasks.source.glob : tasks.source.file, `blocked after ${attempts} attempts`] });
  }
  for (const p of machine.phases) {
    const kind = p.kind === "agent" ? `agent ${p.agent}${p.tools ? `, tools ${p.tools}` : ""}` : p.kind === "ask" ? "ask a person" : p.kind === "group" ? `parallel: ${(p.members ?? []).join(", ")}` : p.kind === "pipeline" ? `pipeline ${p.pipeline}` : "run";
    const sandbox = phaseSandbox(machine, p).mode;
    const what = `${kind}${sandbox === "off" ? "" : `, sandbox ${sandbox}`}`;
    const role = p.name === machine.head ? " (loop head)" : gate === p.name ? " (final gate)" : p.memberOf !== undefined ? ` (in ${p.memberOf})` : "";
    nodes.push({ id: phaseNodeId(p.name), kind: "phase", label: [`${p.name}${role}`, what], ...(p.name === machine.head ? { head: true } : {}) });
    if (p.kind === "group") nodes.push({ id: joinNodeId(p.name), kind: "join", label: [`join ${p.join}`] });
  }
  const reached = new Set(edges.map((e) => e.to));
  for (const o of OUTCOMES) if (reached.has(o)) nodes.push({ id: outcomeId(o), kind: "outcome", label: [o] });
  return { nodes, edges };
}

/** The phase after index `index` in file order, past the members of parallel groups (they run only with their group). */
export function nextOutsideGroups(machine: Machine, index: number): CompiledPhase | undefined {
  for (let i = index + 1; i < machine.phases.length; i++) if (machine.phases[i]!.memberOf === undefined) return machine.phases[i];
  return undefined;
}
