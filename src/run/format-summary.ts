import type { HistoryEntry } from "../pipeline/context.ts";
import type { Snapshot } from "../machine/types.ts";
import { formatDuration } from "../pipeline/duration.ts";
import type { RunInfo } from "./run-info.ts";

/** summary.md: a human report of the run, from the snapshot and iterations.jsonl. */
export function formatSummary(info: RunInfo, s: Snapshot, iterations: (HistoryEntry & { at?: string })[]): string {
  const out: string[] = [];
  const awaiting = s.awaiting?.kind === "answer" ? s.awaiting : null;
  const outcome = s.status === "interrupted" ? "interrupted (resumable)" : s.outcome ? s.outcome.outcome : awaiting ? "awaiting answer" : "running";
  out.push(`# ${info.pipeline} — run ${info.run_id}`, "");
  out.push(`- **Outcome:** ${outcome}${s.outcome ? ` — ${s.outcome.reason.message} (\`${s.outcome.reason.code}\`)` : ""}`);
  out.push(`- **Pipeline:** \`${info.file}\` (${info.hash.slice(0, 19)}…), phaseloop ${info.version}`);
  out.push(`- **Workdir:** \`${info.workdir}\``);
  out.push(`- **Started:** ${info.started_at}; active time ${formatDuration(s.elapsedMs)}`);
  out.push(`- **Iterations:** ${s.iteration} of ${s.limits.maxIterations}; phases run ${s.counters.phasesRun}, retries ${s.counters.retries}`);
  out.push(`- **Tokens:** ${s.tokens}; **cost:** $${s.costUsd.toFixed(2)}`);
  if (Object.keys(info.params).length) out.push(`- **Params:** ${Object.entries(info.params).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ")}`);
  if (s.tasks) {
    const done = s.tasks.filter((t) => t.status === "done").length;
    out.push(`- **Tasks:** ${done} done, ${s.tasks.filter((t) => t.status === "blocked").length} blocked, ${s.tasks.filter((t) => t.status === "pending").length} pending of ${s.tasks.length}`);
  }
  out.push("", "## Iterations", "", "| # | task | phases | files changed |", "|---|---|---|---|");
  for (const it of iterations) {
    const phases = Object.entries(it.phases)
      .map(([name, p]) => `${name}: ${p.status}${p.error ? ` (${p.error})` : ""}`)
      .join(", ");
    const changes = it.changes.length === 0 ? "none" : it.changes.length > 5 ? `${it.changes.slice(0, 5).join(", ")} and ${it.changes.length - 5} more` : it.changes.join(", ");
    out.push(`| ${it.iteration} | ${it.task ?? ""} | ${phases.replace(/\|/g, "\\|")} | ${changes.replace(/\|/g, "\\|")} |`);
  }
  if (s.tasks?.length) {
    out.push("", "## Tasks", "", "| task | status | attempts | note |", "|---|---|---|---|");
    for (const t of s.tasks) out.push(`| ${t.id} ${t.title.replace(/\|/g, "\\|")} | ${t.status} | ${t.attempts} | ${(t.reason ?? "").replace(/\|/g, "\\|")} |`);
  }
  if (s.questions?.length) {
    out.push("", "## Questions", "");
    for (const q of s.questions) {
      out.push(`**${q.phase}** (iteration ${q.iteration}) asked:`, "", ...q.question.split("\n").map((l) => `> ${l}`), "");
      out.push(q.answer === null ? `_Awaiting an answer:_ \`phaseloop resume ${info.run_id} --answer "…"\`` : `Answer: ${q.answer}`, "");
    }
  }
  if (s.lastFailure) {
    out.push("", "## Last failure", "", `Phase \`${s.lastFailure.phase}\` in iteration ${s.lastFailure.iteration}: ${s.lastFailure.message}`, "", "```", s.lastFailure.output_tail.slice(-1500), "```");
  }
  out.push("", "Logs: `events.jsonl` (every event), `iterations.jsonl`, and `phases/NNNN-PHASE/` (prompt, stdout, stderr, output) beside this file.", "");
  return out.join("\n");
}
