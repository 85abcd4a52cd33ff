/// <reference lib="dom" />
/**
 * The page's entry. Live (served by `phaseloop ui`): `/` is the runs list and
 * `/run/KEY` a run, each fed by the server's event stream; every request goes
 * to the page's own origin. Report (`phaseloop report --html`): one run, its
 * data inline in the file, no request at all.
 */
import type { ControlResult } from "../ui/controls.ts";
import type { Inflight, PhaseFiles, RunRow } from "../ui/read-runs.ts";
import type { RunEvent } from "../run/run-events.ts";
import { clear, h } from "./dom.ts";
import { runPage, type RunPage, type RunSnapshot } from "./run-page.ts";
import { runsList } from "./runs-list.ts";

interface ReportData {
  key: string;
  run: RunSnapshot;
  /** Files of some phase runs, by folder name. */
  phases: Record<string, PhaseFiles>;
  generated_at: string;
  version: string;
}

const app = document.getElementById("app")!;

function showReport(): void {
  const data = JSON.parse(document.getElementById("run-data")!.textContent ?? "{}") as ReportData;
  const page = runPage(data.key, { load: async (dir) => data.phases[dir] ?? "absent" });
  app.append(h("p", { class: "report-banner" }, `phaseloop ${data.version} report of run ${data.key}, written ${data.generated_at.replace("T", " ").slice(0, 19)} UTC (read-only).`), page.el);
  page.snapshot(data.run);
}

let source: EventSource | undefined;
let current: { dispose(): void } | undefined;

if (document.body.dataset.mode === "report") showReport();
else showLive();

function showLive(): void {
  window.addEventListener("popstate", () => route());
  route();
}

function navigate(path: string): void {
  history.pushState(null, "", path);
  route();
}

function route(): void {
  source?.close();
  current?.dispose();
  clear(app);
  const header = h("header", { class: "top" }, h("a", { href: "/", class: "brand" }, "phaseloop"), h("span", { class: "conn", id: "conn" }, "connecting…"));
  header.querySelector("a")!.addEventListener("click", (e) => {
    e.preventDefault();
    navigate("/");
  });
  app.append(header);
  const path = location.pathname;
  if (path.startsWith("/run/")) return openRun(decodeURIComponent(path.slice(5)));
  const list = runsList((key) => navigate(`/run/${key}`));
  app.append(list.el);
  current = list;
  source = connect("/api/stream?list=1", { runs: (rows) => list.update(rows as RunRow[]) });
}

function openRun(key: string): void {
  const page: RunPage = runPage(key, {
    load: async (dir) => {
      const res = await fetch(`/api/phase?key=${encodeURIComponent(key)}&dir=${encodeURIComponent(dir)}`, { credentials: "same-origin" });
      return res.ok ? ((await res.json()) as PhaseFiles) : null;
    },
    control: async (action, body) => {
      const res = await fetch(`/api/${action}`, { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const text = await res.text();
      try {
        return JSON.parse(text) as ControlResult;
      } catch {
        return { ok: false, message: text.trim() || `HTTP ${res.status}` };
      }
    },
    back: () => navigate("/"),
  });
  app.append(page.el);
  current = page;
  source = connect(`/api/stream?key=${encodeURIComponent(key)}`, {
    run: (d) => page.snapshot(d as RunSnapshot),
    events: (d) => page.events(d as RunEvent[]),
    output: (d) => {
      const o = d as { dir: string; stream: string; text: string };
      page.output(o.dir, o.stream, o.text);
    },
    live: (d) => page.live((d as { live: boolean }).live),
    inflight: (d) => page.inflight(d as Inflight | null),
    missing: () => {
      clear(page.el);
      page.el.append(h("h1", {}, key), h("p", { class: "error" }, "There is no such run in this workdir."));
    },
  });
}

function connect(url: string, handlers: Record<string, (data: unknown) => void>): EventSource {
  const es = new EventSource(url);
  const conn = document.getElementById("conn");
  es.addEventListener("open", () => {
    if (conn) {
      conn.textContent = "live";
      conn.className = "conn on";
    }
  });
  es.addEventListener("error", () => {
    if (conn) {
      conn.textContent = "reconnecting…";
      conn.className = "conn off";
    }
  });
  for (const [name, fn] of Object.entries(handlers)) es.addEventListener(name, (e) => fn(JSON.parse((e as MessageEvent<string>).data)));
  return es;
}
