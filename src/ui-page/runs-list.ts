/// <reference lib="dom" />
/**
 * The runs list: one row per run, newest first, its lanes and sub-pipeline
 * runs indented below it. The server sends the whole list again when it
 * changes; running rows also tick their duration once a second, here.
 */
import type { RunRow } from "../ui/read-runs.ts";
import { badge, clear, formatCost, formatCount, formatDuration, h } from "./dom.ts";

export interface RunsListView {
  el: HTMLElement;
  update(rows: RunRow[]): void;
  dispose(): void;
}

export function runsList(open: (key: string) => void): RunsListView {
  const body = h("tbody");
  const empty = h("p", { class: "empty" }, "No runs in this workdir yet. Start one with phaseloop run PIPELINE: it appears here at once.");
  const table = h(
    "table",
    { class: "runs" },
    h("thead", {}, h("tr", {}, h("th", {}, "run"), h("th", {}, "pipeline"), h("th", {}, "outcome"), h("th", {}, "iteration"), h("th", {}, "phase"), h("th", { class: "num" }, "duration"), h("th", { class: "num" }, "tokens"), h("th", { class: "num" }, "cost"))),
    body,
  );
  const el = h("section", { class: "runs-page" }, h("h1", {}, "Runs"), empty, table);
  let rows: RunRow[] = [];
  let shownAt = Date.now();
  const ticker = setInterval(() => tickDurations(), 1000);

  function tickDurations(): void {
    const dt = Date.now() - shownAt;
    body.querySelectorAll<HTMLElement>("td[data-running]").forEach((td) => {
      td.textContent = formatDuration(Number(td.dataset.running) + dt);
    });
  }

  function update(next: RunRow[]): void {
    rows = next;
    shownAt = Date.now();
    empty.hidden = rows.length > 0;
    table.hidden = rows.length === 0;
    clear(body);
    for (const r of rows) {
      const link = h("a", { href: `/run/${r.key}`, class: "run-link" }, r.depth === 0 ? r.key : r.key.split("/").slice(-2).join(" "));
      link.addEventListener("click", (e) => {
        if ((e as MouseEvent).ctrlKey || (e as MouseEvent).metaKey) return;
        e.preventDefault();
        open(r.key);
      });
      const iteration = r.iteration === null ? "–" : `${r.iteration}${r.max_iterations ? ` / ${r.max_iterations}` : ""}`;
      const duration = h("td", { class: "num" }, formatDuration(r.duration_ms));
      if (r.state === "running" && r.duration_ms !== null) duration.dataset.running = String(r.duration_ms);
      const outcome = h("td", {}, badge(r.state), r.reason ? h("span", { class: "reason" }, ` ${r.reason}`) : null, r.question && r.state === "awaiting answer" ? h("span", { class: "reason" }, ` asks: ${r.question}`) : null);
      const tr = h(
        "tr",
        { class: `depth-${Math.min(r.depth, 3)}`, "data-key": r.key, "data-state": r.state },
        h("td", {}, r.depth > 0 ? h("span", { class: "kind" }, r.kind === "lane" ? "lane " : "sub ") : null, link),
        h("td", {}, r.pipeline ?? "–"),
        outcome,
        h("td", { class: "iteration" }, iteration),
        h("td", { class: "phase" }, r.phase ?? ""),
        duration,
        h("td", { class: "num" }, formatCount(r.tokens)),
        h("td", { class: "num" }, formatCost(r.cost_usd)),
      );
      body.append(tr);
    }
  }

  return { el, update, dispose: () => clearInterval(ticker) };
}
