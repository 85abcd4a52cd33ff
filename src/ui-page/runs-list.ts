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

  /** Rows stay the same elements from one update to the next (a click is never lost to a redraw); only their cells change. */
  const trs = new Map<string, { tr: HTMLTableRowElement; cells: HTMLTableCellElement[]; sig: string }>();

  function update(next: RunRow[]): void {
    rows = next;
    shownAt = Date.now();
    empty.hidden = rows.length > 0;
    table.hidden = rows.length === 0;
    const keys = new Set(rows.map((r) => r.key));
    for (const [key, entry] of trs) {
      if (!keys.has(key)) {
        entry.tr.remove();
        trs.delete(key);
      }
    }
    rows.forEach((r, i) => {
      let entry = trs.get(r.key);
      if (!entry) {
        const link = h("a", { href: `/run/${r.key}`, class: "run-link" }, r.depth === 0 ? r.key : r.key.split("/").slice(-2).join(" "));
        link.addEventListener("click", (e) => {
          if ((e as MouseEvent).ctrlKey || (e as MouseEvent).metaKey) return;
          e.preventDefault();
          open(r.key);
        });
        const cells = Array.from({ length: 7 }, () => h("td"));
        cells[4]!.className = "num";
        cells[5]!.className = "num";
        cells[6]!.className = "num";
        const tr = h("tr", { class: `depth-${Math.min(r.depth, 3)}`, "data-key": r.key }, h("td", {}, r.depth > 0 ? h("span", { class: "kind" }, r.kind === "lane" ? "lane " : "sub ") : null, link), ...cells);
        entry = { tr, cells, sig: "" };
        trs.set(r.key, entry);
      }
      const sig = JSON.stringify(r);
      if (sig !== entry.sig) {
        entry.sig = sig;
        fill(entry.tr, entry.cells, r);
      }
      if (body.children[i] !== entry.tr) body.insertBefore(entry.tr, body.children[i] ?? null);
    });
  }

  function fill(tr: HTMLTableRowElement, cells: HTMLTableCellElement[], r: RunRow): void {
    tr.dataset.state = r.state;
    const [pipeline, outcome, iteration, phase, duration, tokens, cost] = cells as [HTMLTableCellElement, HTMLTableCellElement, HTMLTableCellElement, HTMLTableCellElement, HTMLTableCellElement, HTMLTableCellElement, HTMLTableCellElement];
    pipeline.textContent = r.pipeline ?? "–";
    clear(outcome);
    outcome.append(badge(r.state));
    if (r.reason) outcome.append(h("span", { class: "reason" }, ` ${r.reason}`));
    if (r.question && r.state === "awaiting answer") outcome.append(h("span", { class: "reason" }, ` asks: ${r.question}`));
    iteration.textContent = r.iteration === null ? "–" : `${r.iteration}${r.max_iterations ? ` / ${r.max_iterations}` : ""}`;
    phase.textContent = r.phase ?? "";
    duration.textContent = formatDuration(r.duration_ms);
    if (r.state === "running" && r.duration_ms !== null) duration.dataset.running = String(r.duration_ms);
    else delete duration.dataset.running;
    tokens.textContent = formatCount(r.tokens);
    cost.textContent = formatCost(r.cost_usd);
  }

  return { el, update, dispose: () => clearInterval(ticker) };
}
