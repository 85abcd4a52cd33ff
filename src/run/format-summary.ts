/**
 * summary.md: the report of a run a person reads, on GitHub or in an editor.
 * Built from the snapshot, iterations.jsonl and the event log: the outcome and
 * why in words, the figures that matter, a Mermaid picture of the path the
 * run took (the phases visited, with counts), one row per iteration (a long
 * run's first and last ones), and what went wrong (failures, retries, policy
 * violations). Sections and columns with nothing to say are left out. Pure.
 */
import type { HistoryEntry } from "../pipeline/context.ts";
import type { Snapshot } from "../machine/types.ts";
import type { RunEvent } from "./run-events.ts";
import type { RunInfo } from "./run-info.ts";

export type IterationRecord = HistoryEntry & { at?: string };

/** Why the table's "files changed" says what it says, when that may surprise: not measured at all, or measured as none. */
function measureNote(info: RunInfo, iterations: readonly IterationRecord[], ignoredChanged: readonly string[]): string | undefined {
  if (info.measure === "off") {
    return "Changed files were not measured: nothing in this pipeline reads them (no `stop.no_progress`, no tool set with `write` globs, no `changes` in a template, a condition or a prompt).";
  }
  if (!iterations.some((it) => it.changes.length === 0)) return undefined;
  const where = info.measure === "git" ? "with git: a file git ignores counts only where the write globs of the phase that changed it name it, and" : "by file snapshots:";
  const general = `Where an iteration says "none", no file changed as phaseloop measures it (${where} phaseloop's own \`.phaseloop/\` and its own output, such as \`phaseloop run … > run.out\`, never count).`;
  if (ignoredChanged.length === 0) return general;
  return `${general} These files changed during the run, but git ignores them and no write glob of a phase names them, so they were not progress: ${list(ignoredChanged.map((p) => `\`${p}\``), 10)}. To count a phase's work there, name the files in its tool set's \`write\`.`;
}

/** `1,200`, whatever the locale. */
function count(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${count(n)} ${n === 1 ? one : many}`;
}

function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(Math.round(ms / 100) / 10).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h} h ${String(m).padStart(2, "0")} min` : `${m} min ${String(s % 60).padStart(2, "0")} s`;
}

function cost(usd: number): string {
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${count(Math.floor(usd))}.${usd.toFixed(2).split(".")[1]}`;
}

/** A table cell: one line, pipes escaped. */
function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|");
}

function list(items: readonly string[], max = 5): string {
  return items.length <= max ? items.join(", ") : `${items.slice(0, max).join(", ")} and ${items.length - max} more`;
}

const OUTCOME_WORDS: Record<string, string> = {
  complete: "✅ complete",
  blocked: "⛔ blocked",
  failed: "❌ failed",
  stopped: "⏹️ stopped without completing",
  interrupted: "⏸️ interrupted (resumable with `phaseloop resume`)",
  "awaiting answer": "❓ awaiting answer",
  running: "▶️ running",
};

/** A stop reason in words: its message, without the setting it names in parentheses. */
function reasonWords(message: string, code: string): string {
  const text = message.replace(/\s*\((?:no_progress|consecutive_failures|max_iterations|max_duration): [^)]*\)/g, "").trim();
  return text === "" ? code.replace(/_/g, " ") : text;
}

function failureWords(p: { error: string | null; message?: string | null; exit_code: number | null }): string {
  const message = p.message?.trim() ?? "";
  if (p.error === "exit_nonzero") return message || `exit code ${p.exit_code ?? "?"}`;
  const head = (p.error ?? "failed").replace(/_/g, " ");
  return message === "" ? head : `${head}: ${message}`;
}

type Finished = Extract<RunEvent, { type: "phase.finished" }>;

interface PathFacts {
  visits: Map<string, { runs: number; failed: number }>;
  steps: Map<string, number>;
  retries: Extract<RunEvent, { type: "phase.retry" }>[];
  violations: Extract<RunEvent, { type: "policy.violation" }>[];
  refusals: Extract<RunEvent, { type: "sandbox.refused" }>[];
  skipped: number;
  iterationMs: Map<number, number>;
  failures: Finished[];
}

function pathFacts(events: readonly RunEvent[], end: string | null): PathFacts {
  const facts: PathFacts = { visits: new Map(), steps: new Map(), retries: [], violations: [], refusals: [], skipped: 0, iterationMs: new Map(), failures: [] };
  let previous = "start";
  const startedAt = new Map<number, number>();
  const step = (from: string, to: string) => facts.steps.set(`${from}\u0000${to}`, (facts.steps.get(`${from}\u0000${to}`) ?? 0) + 1);
  for (const e of events) {
    switch (e.type) {
      case "phase.finished": {
        const v = facts.visits.get(e.phase) ?? { runs: 0, failed: 0 };
        v.runs += 1;
        if (e.status === "failed") {
          v.failed += 1;
          facts.failures.push(e);
        }
        facts.visits.set(e.phase, v);
        // a retry of the same phase is a loop on it
        step(previous, e.phase);
        previous = e.phase;
        break;
      }
      case "phase.retry":
        facts.retries.push(e);
        break;
      case "policy.violation":
        facts.violations.push(e);
        break;
      case "sandbox.refused":
        facts.refusals.push(e);
        break;
      case "phase.skipped":
        facts.skipped += 1;
        break;
      case "iteration.started":
        startedAt.set(e.iteration, Date.parse(e.at));
        break;
      case "iteration.finished": {
        const t = startedAt.get(e.iteration);
        if (t !== undefined) facts.iterationMs.set(e.iteration, Date.parse(e.at) - t);
        break;
      }
      default:
        break;
    }
  }
  if (end !== null && previous !== "start") step(previous, end);
  return facts;
}

const nodeId = (name: string) => `p_${name.replace(/[^A-Za-z0-9_]/g, "_")}`;
const quote = (text: string) => `"${text.replace(/"/g, "#quot;").replace(/[|<>]/g, " ")}"`;

/** The path the run took as a Mermaid flowchart: phases visited with their runs, steps with how often. */
function pathDiagram(facts: PathFacts, end: string | null): string[] {
  const lines = ["```mermaid", "flowchart LR", `  start([${quote("start")}])`];
  for (const [name, v] of facts.visits) lines.push(`  ${nodeId(name)}[${quote(`${name} ×${count(v.runs)}${v.failed ? `, ${count(v.failed)} failed` : ""}`)}]`);
  if (end !== null) lines.push(`  end_((${quote(end)}))`);
  for (const [key, n] of facts.steps) {
    const [from, to] = key.split("\u0000") as [string, string];
    const a = from === "start" ? "start" : nodeId(from);
    const b = to === end ? "end_" : nodeId(to);
    lines.push(`  ${a} -->${n > 1 ? `|${quote(`×${count(n)}`)}|` : ""} ${b}`);
  }
  lines.push("```");
  return lines;
}

/**
 * summary.md of a run, as it stands (finished, or interrupted). `hidden`:
 * iterations left out of the table, after the first `after` rows of
 * `iterations` (a long run's table shows its first and last ones).
 */
export function formatSummary(info: RunInfo, s: Snapshot, iterations: IterationRecord[], events: readonly RunEvent[] = [], artifacts: readonly { path: string; bytes: number }[] = [], hidden?: { after: number; count: number }, ignoredChanged: readonly string[] = []): string {
  const state = s.status === "interrupted" ? "interrupted" : s.outcome ? s.outcome.outcome : s.awaiting?.kind === "answer" ? "awaiting answer" : "running";
  const end = s.outcome ? s.outcome.outcome : null;
  const facts = pathFacts(events, end);
  const out: string[] = [`# ${info.pipeline} · run ${info.run_id}`, ""];
  out.push(`**${OUTCOME_WORDS[state] ?? state}**${s.outcome ? `: ${reasonWords(s.outcome.reason.message, s.outcome.reason.code)}` : ""}`, "");

  const facts2: [string, string][] = [];
  facts2.push(["Started", `${info.started_at.replace("T", " ").replace(/(\.\d+)?Z$/, " UTC")}`]);
  facts2.push(["Time", duration(s.elapsedMs)]);
  facts2.push(["Iterations", `${count(s.iteration)} of ${count(s.limits.maxIterations)}`]);
  const failedRuns = facts.failures.length;
  facts2.push(["Phases run", `${count(s.counters.phasesRun)}${failedRuns ? `, ${count(failedRuns)} failed` : ""}${s.counters.retries ? `, ${plural(s.counters.retries, "retry", "retries")}` : ""}${facts.skipped ? `, ${count(facts.skipped)} skipped` : ""}`]);
  if (s.tokens > 0) facts2.push(["Tokens", count(s.tokens)]);
  if (s.costUsd > 0) facts2.push(["Cost", cost(s.costUsd)]);
  if (s.tasks?.length) {
    const by = (st: string) => s.tasks!.filter((t) => t.status === st).length;
    facts2.push(["Tasks", [`${by("done")} done`, by("blocked") ? `${by("blocked")} blocked` : "", by("pending") ? `${by("pending")} pending` : ""].filter(Boolean).join(", ") + ` of ${s.tasks.length}`]);
  }
  if (facts.violations.length) facts2.push(["Policy violations", `${count(facts.violations.length)}`]);
  if (Object.keys(info.params).length) facts2.push(["Params", Object.entries(info.params).map(([k, v]) => `\`${k}\` = ${cell(JSON.stringify(v))}`).join(", ")]);
  facts2.push(["Pipeline", `\`${info.file}\`, phaseloop ${info.version}`]);
  const agents = Object.entries(info.agents ?? {});
  if (agents.length) facts2.push(["Agents", agents.map(([k, v]) => `${k}: ${cell(v)}`).join(", ")]);
  const models = Object.entries(info.models ?? {});
  if (models.length) facts2.push(["Models", models.map(([phase, model]) => `${phase}: \`${cell(model)}\``).join(", ")]);
  out.push("| | |", "|---|---|", ...facts2.map(([k, v]) => `| ${k} | ${v} |`), "");

  if (facts.visits.size > 0) out.push("## Path taken", "", ...pathDiagram(facts, end), "");

  if (iterations.length > 0) {
    const withTask = iterations.some((it) => it.task);
    const withTime = iterations.some((it) => facts.iterationMs.has(it.iteration));
    const head = ["#", ...(withTask ? ["task"] : []), "phases", "files changed", ...(withTime ? ["time"] : [])];
    out.push("## Iterations", "", `| ${head.join(" | ")} |`, `|${head.map((h) => (h === "#" || h === "time" ? "--:" : "---")).join("|")}|`);
    for (const [i, it] of iterations.entries()) {
      if (hidden && i === hidden.after) out.push(`| … | ${[`${plural(hidden.count, "more iteration")}, in \`iterations.jsonl\``, ...head.slice(2).map(() => "")].join(" | ")} |`);
      const phases = Object.entries(it.phases)
        .map(([name, p]) => (p.status === "failed" ? `❌ ${name}: ${failureWords(p)}` : p.status === "skipped" ? `⏭️ ${name}` : `✅ ${name}`))
        .join("<br>");
      const changes = info.measure === "off" ? "not measured" : it.changes.length === 0 ? "none" : `${count(it.changes.length)}: ${list(it.changes.map((c) => `\`${c}\``), 3)}`;
      const time = facts.iterationMs.get(it.iteration);
      const row = [String(it.iteration), ...(withTask ? [it.task ?? ""] : []), phases, changes, ...(withTime ? [time === undefined ? "" : duration(time)] : [])];
      out.push(`| ${row.map(cell).join(" | ")} |`);
    }
    out.push("");
    const note = measureNote(info, iterations, ignoredChanged);
    if (note) out.push(note, "");
  }

  if (s.tasks?.length) {
    out.push("## Tasks", "", "| task | status | attempts | note |", "|---|---|--:|---|");
    for (const t of s.tasks) out.push(`| ${cell(`${t.id}${t.title && t.title !== t.id ? ` ${t.title}` : ""}`)} | ${t.status} | ${count(t.attempts)} | ${cell(t.reason ?? "")} |`);
    out.push("");
  }

  if (s.lanes?.lanes.length) {
    out.push("## Lanes", "", `Up to ${s.lanes.parallel} tasks at once, each in its own git worktree, merged into \`${s.lanes.into}\` when done.`, "", "| task | lane | branch | note |", "|---|---|---|---|");
    for (const l of s.lanes.lanes) {
      const note = [l.reason ?? "", l.conflicts.length ? `conflicting files: ${l.conflicts.map((f) => `\`${f}\``).join(", ")}` : "", l.rebased ? "rebased and verified again" : ""].filter(Boolean).join("; ");
      out.push(`| ${cell(l.task)} | ${l.status} | ${l.status === "merged" ? "" : `\`${l.branch}\``} | ${cell(note)} |`);
    }
    out.push("");
  }

  if (s.questions?.length) {
    out.push("## Questions", "");
    for (const q of s.questions) {
      out.push(`**${q.phase}** (iteration ${q.iteration}) asked:`, "", ...q.question.split("\n").map((l) => `> ${l}`), "");
      out.push(q.answer === null ? `_Awaiting an answer:_ \`phaseloop resume ${info.run_id} --answer "…"\`` : `Answer: ${q.answer}`, "");
    }
  }

  const problems: string[] = [];
  for (const v of facts.violations) problems.push(`- Phase \`${v.phase}\` changed ${plural(v.paths.length, "file")} outside its write globs (${list(v.paths.map((p) => `\`${p}\``))}); ${v.action === "revert" ? "the changes were reverted and the phase failed" : v.action === "fail" ? "the phase failed" : "allowed with a warning"}.`);
  for (const r of facts.refusals) problems.push(`- \`${r.phase}\` was refused by the OS sandbox: ${list(r.refused.slice(0, 10).map((x) => `\`${x}\``))}${r.refused.length > 10 ? ` and ${r.refused.length - 10} more` : ""}.`);
  for (const r of facts.retries) problems.push(`- Phase \`${r.phase}\` was retried (attempt ${r.attempt}) after ${duration(r.delay_ms)}: ${failureWords({ error: r.error, message: r.message, exit_code: null })}.`);
  if (problems.length) out.push("## Retries and policy violations", "", ...problems, "");

  if (s.lastFailure && state !== "complete") {
    out.push("## Last failure", "", `Phase \`${s.lastFailure.phase}\` in iteration ${s.lastFailure.iteration}: ${failureWords(s.lastFailure)}.`);
    const tail = s.lastFailure.output_tail.trim();
    if (tail !== "") out.push("", "```", tail.slice(-1500), "```");
    out.push("");
  }
  if (artifacts.length > 0) {
    out.push("## Artifacts", "", `In \`${info.artifacts ?? "artifacts"}/\`:`, "");
    for (const a of artifacts) out.push(`- \`${cell(a.path)}\` (${plural(a.bytes, "byte")})`);
    out.push("");
  }
  out.push("Beside this file: `events.jsonl` (every event), `iterations.jsonl`, and `phases/NNNN-PHASE/` (prompt, output and logs of each phase run).", "");
  return out.join("\n");
}
