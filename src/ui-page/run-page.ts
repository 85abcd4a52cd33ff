/// <reference lib="dom" />
/**
 * A run's page: its header and controls, the graph with the path taken, the
 * timeline, the phase run in focus, the live output, tokens and cost over
 * time. It folds the events it is sent into its view with the server's own
 * code (run-view.ts), so the page and `status` never disagree.
 */
import { runStateOf } from "../records/run-summary.ts";
import type { ControlResult } from "../ui/controls.ts";
import type { RunGraph } from "../ui/run-graph.ts";
import type { Inflight } from "../ui/read-runs.ts";
import { addToRunView, type RunView } from "../ui/run-view.ts";
import type { RunEvent } from "../run/run-events.ts";
import { badge, clear, formatCost, formatCount, formatDuration, h } from "./dom.ts";
import { graphView, type GraphView } from "./graph-view.ts";
import { outputPanel, phasePanel, type LoadFiles } from "./phase-panel.ts";
import { timelineView } from "./timeline.ts";
import { usageChart } from "./usage-chart.ts";

export interface RunSnapshot {
  view: RunView;
  live: boolean;
  graph: RunGraph;
  problem: string | null;
  inflight?: Inflight | null;
}

export interface RunPageOptions {
  load: LoadFiles;
  /** Absent in a report: no controls. */
  control?: (action: "stop" | "resume" | "answer", body: Record<string, string>) => Promise<ControlResult>;
  back?: () => void;
}

export interface RunPage {
  el: HTMLElement;
  snapshot(s: RunSnapshot): void;
  events(events: RunEvent[]): void;
  output(dir: string, stream: string, text: string): void;
  live(live: boolean): void;
  inflight(inflight: Inflight | null): void;
  dispose(): void;
}

export function runPage(key: string, options: RunPageOptions): RunPage {
  let view: RunView | undefined;
  let live = false;
  let inflight: Inflight | null = null;
  let graph: GraphView | undefined;
  let graphOf: RunGraph | undefined;
  let selected: number | null = null;
  let receivedAt = Date.now();
  const title = h("h1", {}, options.back ? h("a", { href: "/", class: "back" }, "Runs") : null, options.back ? " / " : null, key);
  const facts = h("div", { class: "facts-row" });
  const controls = h("div", { class: "controls" });
  const message = h("p", { class: "control-message", role: "status" });
  const graphBox = h("div", { class: "graph-card" });
  const usage = usageChart();
  const panel = phasePanel(options.load);
  const output = outputPanel();
  const timeline = timelineView(
    (n) => select(n),
    () => (view ? Math.max(view.now, live ? Date.now() - receivedAt + view.now : view.now) : 0),
  );
  const notes = h("ul", { class: "notes" });
  const el = h(
    "section",
    { class: "run-page", "data-key": key },
    title,
    facts,
    controls,
    message,
    h("div", { class: "grid" }, h("div", { class: "card" }, h("h2", {}, "The loop"), graphBox), h("div", { class: "card" }, h("h2", {}, "Running now"), output.el, h("h2", {}, "Tokens and cost"), usage.el)),
    h("div", { class: "card" }, h("h2", {}, "Iterations"), timeline.el),
    h("div", { class: "card" }, h("h2", {}, "Phase run"), panel.el),
    h("div", { class: "card" }, h("h2", {}, "Notes"), notes),
  );
  if (options.back) title.querySelector("a")!.addEventListener("click", (e) => {
    e.preventDefault();
    options.back!();
  });
  const ticker = setInterval(() => {
    if (live && view) renderFacts();
  }, 1000);

  function select(n: number): void {
    selected = n;
    timeline.select(n);
    panel.show(view?.runs[n] ?? null);
  }

  function state(): string {
    return view ? runStateOf(view.summary, live) : "…";
  }

  function renderFacts(): void {
    if (!view) return;
    const s = view.summary;
    document.title = `${state()} · ${s.pipeline ?? key} · phaseloop`;
    const elapsed = s.finished ? s.finished.elapsed_ms : live ? view.now + (Date.now() - receivedAt) : view.now;
    clear(facts);
    facts.append(
      badge(state()),
      fact("pipeline", s.pipeline ?? "–"),
      fact("iteration", `${Math.max(s.iteration, inflight?.iteration ?? 0)}${s.max_iterations ? ` / ${s.max_iterations}` : ""}`),
      fact("phase", s.phase ?? (inflight?.phases.length ? inflight.phases.map((p) => p.phase).join(", ") : (inflight?.waiting ?? "–"))),
      fact("duration", formatDuration(elapsed)),
      fact("tokens", formatCount(s.tokens)),
      fact("cost", formatCost(s.cost_usd)),
      fact("phase runs", `${s.phases_run} (${s.failures} failed, ${s.retries} retried)`),
    );
    if (s.finished) facts.append(h("p", { class: "reason" }, `${s.finished.outcome}: ${s.finished.reason.message || s.finished.reason.code}`));
  }

  /** Controls are drawn again only when what they offer changes: a click or a half-typed answer is never lost to a redraw. */
  let controlsFor = "";
  function renderControls(): void {
    if (!view || !options.control || key.includes("/")) return;
    const st = state();
    const q = view.summary.question;
    const sig = JSON.stringify([st, q?.phase, q?.question, q?.iteration]);
    if (sig === controlsFor) return;
    controlsFor = sig;
    clear(controls);
    if (q !== null && st === "running") {
      // a run asking in a terminal reads its answer there; stopped, it waits for one from anywhere
      controls.append(h("div", { class: "answer" }, h("p", { class: "question" }, h("strong", {}, `${q.phase} asks: `), q.question), h("p", { class: "muted" }, "The run asks in the terminal it runs in: answer it there, or stop it here and answer it once it has stopped.")));
    }
    if (q !== null && st === "awaiting answer") {
      const input = h("input", { type: "text", name: "answer", placeholder: "your answer", "aria-label": "answer", autocomplete: "off" });
      const form = h("form", { class: "answer" }, h("p", { class: "question" }, h("strong", {}, `${q.phase} asks: `), q.question), input, h("button", { type: "submit", class: "primary" }, "Answer"));
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        if (input.value.trim() !== "") void act("answer", { answer: input.value });
      });
      controls.append(form);
    }
    if (st === "running") controls.append(button("Stop", "stop", "Stops the run as Ctrl-C does: its state is saved and it can be resumed."));
    if (st === "interrupted" || st === "crashed") controls.append(button("Resume", "resume", "Continues the run from its checkpoint."));
  }

  function button(label: string, action: "stop" | "resume", help: string): HTMLElement {
    const b = h("button", { type: "button", class: action === "stop" ? "danger" : "primary", title: help, "data-action": action }, label);
    b.addEventListener("click", () => void act(action, {}));
    return b;
  }

  async function act(action: "stop" | "resume" | "answer", body: Record<string, string>): Promise<void> {
    controls.querySelectorAll("button").forEach((b) => ((b as HTMLButtonElement).disabled = true));
    message.textContent = action === "stop" ? "Stopping…" : action === "resume" ? "Resuming…" : "Answering…";
    try {
      const r = await options.control!(action, { key, ...body });
      message.textContent = r.message;
      message.className = `control-message ${r.ok ? "ok" : "error"}`;
    } catch (error) {
      message.textContent = `The request failed: ${(error as Error).message}`;
      message.className = "control-message error";
    }
    controls.querySelectorAll("button").forEach((b) => ((b as HTMLButtonElement).disabled = false));
  }

  function renderNotes(): void {
    if (!view) return;
    clear(notes);
    const shown = view.notes.slice(-20);
    if (shown.length === 0) notes.append(h("li", { class: "muted" }, "none"));
    for (const n of shown) notes.append(h("li", { class: n.level === "warning" ? "warn" : "" }, `${formatDuration(n.at)}  ${n.message}`));
  }

  let pending = 0;
  function renderAll(): void {
    pending = 0;
    if (!view) return;
    renderFacts();
    renderControls();
    if (graphOf && !graph) {
      graph = graphView(graphOf, (phase) => {
        for (let i = view!.runs.length - 1; i >= 0; i--) if (view!.runs[i]!.phase === phase) return select(i);
      });
      clear(graphBox);
      graphBox.append(graph.el);
    }
    const flying = live ? (inflight?.phases ?? []) : [];
    graph?.update(view, state(), flying.map((p) => p.phase));
    timeline.update(view, live ? inflight : null);
    usage.update(view);
    const q = view.summary.question;
    output.setRunning(flying.map((p) => p.dir), q && !view.summary.finished ? `${q.phase} waits for an answer.` : inflight?.waiting && live ? `${inflight.waiting}.` : "No phase is running.");
    renderNotes();
    if (selected === null && view.runs.length > 0) {
      const failed = view.summary.finished ? [...view.runs].reverse().find((r) => r.status === "failed") : undefined;
      select((failed ?? view.runs[view.runs.length - 1]!).n);
    } else if (selected !== null && view.runs[selected]?.status === "running") panel.show(view.runs[selected]!);
  }
  /** Many events in a burst are drawn once, at the next frame. */
  function later(): void {
    if (pending === 0) pending = requestAnimationFrame(renderAll);
  }

  return {
    el,
    snapshot(s) {
      view = s.view;
      live = s.live;
      inflight = s.inflight ?? null;
      receivedAt = Date.now();
      if (graphOf === undefined || JSON.stringify(graphOf) !== JSON.stringify(s.graph)) {
        graphOf = s.graph;
        graph = undefined;
      }
      if (s.problem) message.textContent = `events.jsonl ${s.problem}`;
      renderAll();
    },
    events(events) {
      if (!view) return;
      for (const e of events) addToRunView(view, e);
      receivedAt = Date.now();
      later();
    },
    output(dir, stream, text) {
      output.add(dir, stream, text);
    },
    live(next) {
      live = next;
      later();
    },
    inflight(next) {
      inflight = next;
      later();
    },
    dispose() {
      clearInterval(ticker);
    },
  };
}

function fact(label: string, value: string): HTMLElement {
  return h("span", { class: "fact" }, h("small", {}, label), value);
}
