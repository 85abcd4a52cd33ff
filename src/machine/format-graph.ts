import { phaseSandbox } from "../sandbox/sandbox-plan.ts";
import type { CompiledPhase, Machine } from "./types.ts";

interface Edge {
  from: string;
  to: string;
  label: string;
  kind: "goto" | "stop" | "fall" | "skip" | "gate" | "fork" | "join";
}

/** The node a parallel group's members join at; the group's rules leave from it. */
export const joinNode = (group: string) => `join:${group}`;

const OUTCOMES = ["complete", "blocked", "failed", "stopped"] as const;

/** The machine's edges: guarded rules, fall-through, skips, and where each can stop. */
export function machineEdges(machine: Machine): Edge[] {
  const edges: Edge[] = [];
  for (const p of machine.phases) {
    // a member runs only in its group: it forks from the group and joins back
    if (p.memberOf !== undefined) {
      edges.push({ from: p.memberOf, to: p.name, label: "", kind: "fork" }, { from: p.name, to: joinNode(p.memberOf), label: "", kind: "join" });
      continue;
    }
    const fall = machine.phases.slice(p.index + 1).find((x) => x.memberOf === undefined)?.name ?? machine.head;
    const from = p.kind === "group" ? joinNode(p.name) : p.name;
    for (const r of p.rules) {
      const label = [r.ifText ?? "", r.task ? `task ${r.task}` : ""].filter(Boolean).join(" / ");
      if (r.goto) edges.push({ from, to: r.goto, label, kind: "goto" });
      else if (r.stop) edges.push({ from, to: r.stop, label, kind: "stop" });
    }
    if (p.rules.length === 0 || p.rules.every((r) => r.if)) edges.push({ from, to: fall, label: p.rules.length ? "otherwise" : "", kind: "fall" });
    if (p.when) edges.push({ from: p.name, to: fall, label: `skip unless ${p.whenText}`, kind: "skip" });
    if (p.exhausted) edges.push({ from: p.name, to: p.exhausted.goto ?? p.exhausted.stop!, label: `after ${p.maxVisits} visit${p.maxVisits === 1 ? "" : "s"}`, kind: p.exhausted.goto ? "skip" : "stop" });
  }
  if (machine.tasks?.finalGate) {
    edges.push({ from: machine.tasks.finalGate, to: "complete", label: "gate passes", kind: "gate" });
    edges.push({ from: machine.tasks.finalGate, to: machine.head, label: "gate fails: reopen task", kind: "gate" });
  }
  return edges;
}

function limitText(machine: Machine): string[] {
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

const nodeId = (name: string) => (name.startsWith("join:") ? `j_${name.slice(5).replace(/[^A-Za-z0-9_]/g, "_")}` : `p_${name.replace(/[^A-Za-z0-9_]/g, "_")}`);

function phaseLabel(p: CompiledPhase, machine: Machine): string {
  const mode = phaseSandbox(machine, p).mode;
  const kind = p.kind === "agent" ? `agent ${p.agent}${p.tools ? `, tools ${p.tools}` : ""}` : p.kind === "ask" ? "ask a person" : p.kind === "group" ? `parallel: ${(p.members ?? []).join(", ")}` : "run";
  const what = `${kind}${mode === "off" ? "" : `, sandbox ${mode}`}`;
  return `${p.name}${p.name === machine.head ? " (loop head)" : ""}\n${what}`;
}

/** A Mermaid flowchart of the machine. */
export function formatMermaid(machine: Machine): string {
  const lines = ["flowchart TD"];
  for (const p of machine.phases) {
    lines.push(`  ${nodeId(p.name)}[${mermaidLabel(phaseLabel(p, machine).replace("\n", " · "))}]`);
    if (p.kind === "group") lines.push(`  ${nodeId(joinNode(p.name))}{{${mermaidLabel(`join ${p.join}`)}}}`);
  }
  const used = new Set(machineEdges(machine).filter((e) => e.kind === "stop" || e.kind === "gate").map((e) => e.to));
  used.add("stopped");
  if (machine.stopRules.length) machine.stopRules.forEach((r) => used.add(r.outcome));
  for (const o of OUTCOMES) if (used.has(o)) lines.push(`  ${o}((${mermaidLabel(o)}))`);
  lines.push(`  start([${mermaidLabel("start")}])`, `  start --> ${nodeId(machine.head)}`);
  for (const e of machineEdges(machine)) {
    const to = (OUTCOMES as readonly string[]).includes(e.to) ? e.to : nodeId(e.to);
    const arrow = e.kind === "skip" ? "-.->" : e.kind === "fork" || e.kind === "join" ? "==>" : "-->";
    lines.push(e.label ? `  ${nodeId(e.from)} ${arrow}|${mermaidLabel(e.label)}| ${to}` : `  ${nodeId(e.from)} ${arrow} ${to}`);
  }
  for (const r of machine.stopRules) lines.push(`  ${nodeId(machine.head)} -.->|${mermaidLabel(`stop.when ${r.ifText}`)}| ${r.outcome}`);
  lines.push(`  limits[${mermaidLabel(`limits: ${limitText(machine).join(", ")}`)}]`, "  limits -.-> stopped");
  lines.push("  classDef outcome fill:#eee,stroke:#555");
  lines.push(`  class ${OUTCOMES.filter((o) => used.has(o)).join(",")} outcome`);
  return lines.join("\n") + "\n";
}

const dotQuote = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`;

/** A Graphviz DOT digraph of the machine. */
export function formatDot(machine: Machine): string {
  const lines = [`digraph ${dotQuote(machine.name)} {`, "  rankdir=TB;", "  node [shape=box, style=rounded];"];
  lines.push(`  start [shape=circle, label="", width=0.2, style=filled, fillcolor=black];`);
  for (const p of machine.phases) {
    lines.push(`  ${dotQuote(p.name)} [label=${dotQuote(phaseLabel(p, machine))}${p.name === machine.head ? ", penwidth=2" : ""}];`);
    if (p.kind === "group") lines.push(`  ${dotQuote(joinNode(p.name))} [label=${dotQuote(`join ${p.join}`)}, shape=diamond];`);
  }
  for (const o of OUTCOMES) lines.push(`  ${dotQuote(`(${o})`)} [label=${dotQuote(o)}, shape=doublecircle];`);
  lines.push(`  start -> ${dotQuote(machine.head)};`);
  for (const e of machineEdges(machine)) {
    const to = (OUTCOMES as readonly string[]).includes(e.to) ? `(${e.to})` : e.to;
    const style = e.kind === "skip" ? ", style=dashed" : e.kind === "fork" || e.kind === "join" ? ", style=bold" : "";
    lines.push(`  ${dotQuote(e.from)} -> ${dotQuote(to)} [label=${dotQuote(e.label)}${style}];`);
  }
  lines.push(`  limits [shape=note, label=${dotQuote(`limits\n${limitText(machine).join("\n")}`)}];`);
  lines.push(`  limits -> ${dotQuote("(stopped)")} [style=dotted];`);
  lines.push("}");
  return lines.join("\n") + "\n";
}

/** The machine in words, for `run --dry-run`. */
export function describeMachine(machine: Machine): string {
  const out: string[] = [`pipeline ${machine.name}${machine.description ? `: ${machine.description}` : ""}`, ""];
  out.push(`loop head: ${machine.head} (entering it starts a new iteration)`);
  out.push(`limits: ${limitText(machine).join(", ")}`);
  if (machine.tasks) {
    const t = machine.tasks;
    out.push(`tasks: ${t.source.kind === "glob" ? `markdown files ${t.source.glob}` : `${t.source.file}${t.source.pointer}`}, order ${t.order}, at most ${typeof t.maxAttempts === "number" ? t.maxAttempts : "param"} attempts each${t.finalGate ? `, final gate ${t.finalGate}` : ""}`);
  }
  out.push("", "phases:");
  for (const p of machine.phases) {
    out.push(`  ${p.index + 1}. ${p.name} — ${p.kind === "agent" ? `agent ${p.agent}${p.tools ? ` with tools ${p.tools}` : ""}, prompt ${p.promptSource}` : p.kind === "ask" ? "asks a person" : "command"}; timeout ${Math.round(p.timeoutMs / 1000)}s${p.idleTimeoutMs ? `, idle ${Math.round(p.idleTimeoutMs / 1000)}s` : ""}; retry ${p.retry.maxAttempts} attempts on ${p.retry.on.join(", ")}`);
    if (p.kind === "group") out.push(`     runs ${(p.members ?? []).join(", ")} at once; succeeded per join ${p.join}`);
    if (p.memberOf) out.push(`     runs only in group ${p.memberOf}`);
    const sandbox = phaseSandbox(machine, p);
    if (p.kind === "agent" || p.kind === "run") out.push(`     OS sandbox: ${sandbox.mode}${sandbox.pointer ? ` (${sandbox.pointer.slice(1).replaceAll("/", ".")})` : p.kind === "run" ? " (a run phase is sandboxed only when it says so)" : " (the default)"}`);
    if (p.whenText) out.push(`     runs only when ${p.whenText}`);
    if (p.exhausted) out.push(`     at most ${p.maxVisits} visit${p.maxVisits === 1 ? "" : "s"} per iteration, then ${p.exhausted.goto ? `go to ${p.exhausted.goto}` : `stop: ${p.exhausted.stop}`}`);
    if (p.memberOf) continue;
    const fall = machine.phases.slice(p.index + 1).find((x) => x.memberOf === undefined)?.name ?? `${machine.head} (next iteration)`;
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
  if (hooks.length) out.push("", `hooks: ${hooks.join(", ")}`);
  return out.join("\n") + "\n";
}
