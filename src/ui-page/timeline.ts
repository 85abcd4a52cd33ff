/// <reference lib="dom" />
/**
 * The iterations as a timeline: a row per iteration (per lane and iteration
 * in a run with lanes), each phase run a bar as long as it took, the members
 * of a parallel group stacked side by side in their row, retries and failures
 * marked. A virtual list: only the rows in sight are in the DOM, so a run of
 * 10,000 iterations scrolls like one of ten.
 */
import type { Inflight } from "../ui/read-runs.ts";
import type { IterationRow, PhaseRun, RunView } from "../ui/run-view.ts";
import { clear, formatDuration, h } from "./dom.ts";

export interface TimelineView {
  el: HTMLElement;
  update(view: RunView, inflight?: Inflight | null): void;
  select(n: number | null): void;
}

const ROW = 28;
const OVERSCAN = 8;
const LABEL = 150;

export function timelineView(onSelect: (n: number) => void, now: () => number): TimelineView {
  const spacer = h("div", { class: "tl-spacer" });
  const rowsEl = h("div", { class: "tl-rows" });
  const scroller = h("div", { class: "tl-scroll", tabindex: "0" }, spacer, rowsEl);
  const caption = h("p", { class: "tl-caption" });
  const el = h("div", { class: "timeline" }, caption, scroller);
  let view: RunView | undefined;
  /** The phases in flight (from the checkpoint), drawn at the end of their iteration's row. */
  let flying: PhaseRun[] = [];
  let flyingRow: IterationRow | null = null;
  let selected: number | null = null;
  let follow = true;
  let frame = 0;

  scroller.addEventListener("scroll", () => {
    follow = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW;
    schedule();
  });
  scroller.addEventListener("click", (e) => {
    const bar = (e.target as Element).closest<HTMLElement>("[data-n]");
    if (bar) onSelect(Number(bar.dataset.n));
  });

  function schedule(): void {
    if (frame === 0) frame = requestAnimationFrame(render);
  }

  function render(): void {
    frame = 0;
    if (!view) return;
    const rows = flyingRow ? [...view.rows, flyingRow] : view.rows;
    spacer.style.height = `${rows.length * ROW}px`;
    scroller.style.height = `${Math.min(360, Math.max(3, rows.length) * ROW + 2)}px`;
    const first = Math.max(0, Math.floor(scroller.scrollTop / ROW) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((scroller.scrollTop + scroller.clientHeight) / ROW) + OVERSCAN);
    rowsEl.style.transform = `translateY(${first * ROW}px)`;
    const width = Math.max(200, scroller.clientWidth - LABEL - 24);
    const clock = now();
    const frag = document.createDocumentFragment();
    for (let i = first; i < last; i++) {
      const row = rows[i]!;
      const runs = [...row.runs.map((n) => view!.runs[n]!).filter(Boolean), ...(row === flyingRow || (flyingRow === null && i === rows.length - 1) ? flying : [])];
      const end = Math.max(row.end, ...runs.map((r) => r.start + (r.ms ?? clock - r.start)));
      const span = Math.max(1, end - row.start);
      const bars = h("div", { class: "tl-bars" });
      // a group's members share its time: stacked in its row, each on a track of its own
      const tracks = new Map<string, number>();
      const members = runs.filter((r) => r.group !== null);
      for (const m of members) if (!tracks.has(`${m.group}:${m.phase}`)) tracks.set(`${m.group}:${m.phase}`, tracks.size);
      for (const r of runs) {
        const ms = r.ms ?? Math.max(0, clock - r.start);
        const bar = h("div", { class: `bar s-${r.status}${r.attempt > 1 ? " retry" : ""}${r.kind === "group" ? " group" : ""}${r.n === selected ? " selected" : ""}`, "data-n": String(r.n), title: describe(r, ms) });
        bar.style.left = `${((r.start - row.start) / span) * width}px`;
        bar.style.width = `${Math.max(3, (ms / span) * width)}px`;
        if (r.group !== null && tracks.size > 1) {
          const t = tracks.get(`${r.group}:${r.phase}`) ?? 0;
          bar.style.top = `${3 + (t * 20) / tracks.size}px`;
          bar.style.height = `${Math.max(3, 20 / tracks.size - 1)}px`;
        }
        if (r.group !== null && tracks.size > 1) bar.classList.add("stacked");
        else if ((ms / span) * width > 60) bar.textContent = `${r.phase}${r.attempt > 1 ? ` #${r.attempt}` : ""} ${formatDuration(ms)}`;
        bars.append(bar);
      }
      const label = `${row.task ? `${row.task} · ` : ""}iteration ${row.iteration}`;
      frag.append(h("div", { class: `tl-row${row.failed ? " failed" : ""}`, "data-row": String(i) }, h("span", { class: "tl-label", title: label }, label, h("small", {}, ` ${formatDuration(span)}`)), bars));
    }
    clear(rowsEl);
    rowsEl.append(frag);
  }

  function update(next: RunView, inflight: Inflight | null = null): void {
    view = next;
    flying = [];
    flyingRow = null;
    if (inflight && inflight.phases.length > 0 && next.t0 !== null) {
      const start = inflight.since === null ? next.now : inflight.since - next.t0;
      const last = next.rows[next.rows.length - 1];
      // a phase of an iteration the log has not begun yet gets a row of its own
      if (!last || last.iteration !== inflight.iteration) flyingRow = { iteration: inflight.iteration, task: null, start, end: start, runs: [], failed: false };
      flying = inflight.phases.map((p, i) => ({ n: -1 - i, iteration: inflight.iteration, phase: p.phase, attempt: p.attempt, kind: "run", dir: p.dir, task: null, group: p.group, start, ms: null, status: "running", error: null, message: null, exit_code: null, tokens: 0, cost_usd: 0, model: null }));
    }
    const lanes = next.lanes.length;
    caption.textContent = `${next.rows.length + (flyingRow ? 1 : 0)} ${next.rows.length === 1 ? "row" : "rows"}${lanes ? ` · ${lanes} lanes` : ""} · ${next.runs.length} phase runs · click a bar for its prompt, output and changes`;
    render();
    if (follow) scroller.scrollTop = scroller.scrollHeight;
  }

  return {
    el,
    update,
    select(n) {
      selected = n;
      schedule();
    },
  };
}

function describe(r: PhaseRun, ms: number): string {
  const parts = [`${r.phase} (iteration ${r.iteration}${r.attempt > 1 ? `, attempt ${r.attempt}` : ""}${r.task ? `, lane ${r.task}` : ""})`, `${r.status}${r.error ? `: ${r.error}` : ""} in ${formatDuration(ms)}`];
  if (r.message) parts.push(r.message);
  if (r.changes?.length) parts.push(`${r.changes.length} files changed`);
  return parts.join("\n");
}
