/// <reference lib="dom" />
/**
 * One phase run up close: what it was and how it ended, the values read from
 * its output, the files it changed, what the sandbox refused and the policy
 * flagged (all from the event log), and its files: the rendered prompt, its
 * output (the end of it), the transcript. And the live output of the running
 * phases, a bounded number of lines each.
 */
import type { PhaseFiles } from "../ui/read-runs.ts";
import type { PhaseRun } from "../ui/run-view.ts";
import { clear, formatCost, formatCount, formatDuration, h } from "./dom.ts";

export type LoadFiles = (dir: string) => Promise<PhaseFiles | null | "absent">;

export function phasePanel(load: LoadFiles): { el: HTMLElement; show(run: PhaseRun | null): void } {
  const el = h("section", { class: "phase-panel" }, h("p", { class: "muted" }, "Click a bar of the timeline or a phase of the graph."));
  let shown = -1;

  function show(run: PhaseRun | null): void {
    clear(el);
    if (run === null) {
      el.append(h("p", { class: "muted" }, "Click a bar of the timeline or a phase of the graph."));
      shown = -1;
      return;
    }
    shown = run.n;
    const facts = [
      `iteration ${run.iteration}`,
      run.attempt > 1 ? `attempt ${run.attempt}` : "",
      run.task ? `lane ${run.task}` : "",
      run.group ? `in group ${run.group}` : "",
      run.kind,
      run.model ? `model ${run.model}` : "",
      formatDuration(run.ms),
      run.tokens ? `${formatCount(run.tokens)} tokens` : "",
      run.cost_usd ? formatCost(run.cost_usd) : "",
    ].filter(Boolean);
    el.append(
      h("h3", {}, run.phase, " ", h("span", { class: `badge st-${run.status}` }, run.status + (run.error ? `: ${run.error}` : ""))),
      h("p", { class: "facts" }, facts.join(" · ")),
      run.message ? h("p", { class: run.status === "failed" ? "error" : "muted" }, run.message) : "",
      section("Values read from its output", run.output ? h("pre", { class: "json" }, JSON.stringify(run.output, null, 2)) : h("p", { class: "muted" }, "none")),
      section(`Files changed (${run.changes?.length ?? 0})`, run.changes?.length ? h("ul", { class: "files" }, run.changes.slice(0, 500).map((f) => h("li", {}, f))) : h("p", { class: "muted" }, "none")),
      run.refused?.length ? section("Refused by the sandbox", h("ul", { class: "files warn" }, run.refused.map((f) => h("li", {}, f)))) : "",
      run.violations?.length ? section("Policy violations", h("ul", { class: "files error" }, run.violations.map((f) => h("li", {}, f)))) : "",
      run.sub ? h("p", {}, "Its pipeline's run: ", h("code", {}, run.sub)) : "",
    );
    if (run.dir === "") return;
    const files = h("div", { class: "files-box" }, h("p", { class: "muted" }, "Loading its files…"));
    el.append(files);
    const n = run.n;
    void load(run.dir).then((got) => {
      if (shown !== n) return;
      clear(files);
      if (got === "absent") {
        files.append(h("p", { class: "muted" }, "This report carries the files of the last and the failed phase runs only; see the run folder for this one."));
        return;
      }
      if (got === null) {
        files.append(h("p", { class: "muted" }, `No files under phases/${run.dir}/.`));
        return;
      }
      if (got.prompt !== null) files.append(section("Rendered prompt", h("pre", { class: "text" }, got.prompt)));
      if (got.stdout !== null) {
        // an agent's JSON event stream is shown as what it says
        const events = got.stdout.trimStart().startsWith("{");
        const shown = events ? got.stdout.split("\n").flatMap(displayLines).join("\n") : got.stdout;
        files.append(section(`${events ? "output (from its event stream)" : "stdout"}${got.cut.stdout ? ` (the last part; ${formatCount(got.cut.stdout)} bytes before it)` : ""}`, h("pre", { class: "text" }, shown)));
      }
      if (got.stderr !== null && got.stderr !== "") files.append(section("stderr", h("pre", { class: "text" }, got.stderr)));
      if (got.transcript !== null) files.append(section("Transcript", h("pre", { class: "text" }, got.transcript)));
      if (got.prompt === null && got.stdout === null && got.transcript === null) files.append(h("p", { class: "muted" }, `No prompt or output under phases/${run.dir}/.`));
    });
  }

  return { el, show };
}

function section(title: string, body: Node): HTMLElement {
  return h("div", { class: "sub" }, h("h4", {}, title), body);
}

/** Lines kept per phase run: the page's memory stays bounded however long a phase prints. */
const LINES_MAX = 500;

/** The running phases' output as it streams: the last lines of each. */
export function outputPanel(): { el: HTMLElement; add(dir: string, stream: string, text: string): void; setRunning(dirs: string[], idleText?: string): void } {
  const el = h("section", { class: "output-panel" });
  const boxes = new Map<string, { box: HTMLElement; pre: HTMLElement; lines: number }>();
  const idle = h("p", { class: "muted" }, "No phase is running.");
  el.append(idle);

  function boxOf(dir: string) {
    let b = boxes.get(dir);
    if (!b) {
      const pre = h("pre", { class: "live" });
      const box = h("div", { class: "live-box", "data-dir": dir }, h("h4", {}, dir), pre);
      b = { box, pre, lines: 0 };
      boxes.set(dir, b);
      el.append(box);
    }
    return b;
  }

  return {
    el,
    add(dir, stream, text) {
      const b = boxOf(dir);
      const stick = b.pre.scrollTop + b.pre.clientHeight >= b.pre.scrollHeight - 4;
      for (const raw of text.split("\n")) {
        for (const line of displayLines(raw)) {
          b.pre.append(h("div", { class: stream === "stderr" ? "err" : "" }, line.length > 2000 ? `${line.slice(0, 2000)}…` : line));
          b.lines += 1;
        }
      }
      while (b.lines > LINES_MAX && b.pre.firstChild) {
        b.pre.removeChild(b.pre.firstChild);
        b.lines -= 1;
      }
      if (stick) b.pre.scrollTop = b.pre.scrollHeight;
      idle.hidden = true;
    },
    setRunning(dirs, idleText = "No phase is running.") {
      idle.textContent = idleText;
      // the finished phases' boxes go (their logs are in the phase panel); at most a few stay
      for (const [dir, b] of boxes) {
        if (!dirs.includes(dir)) {
          b.box.classList.add("done");
          if (boxes.size > 2) {
            b.box.remove();
            boxes.delete(dir);
          }
        }
      }
      for (const dir of dirs) boxOf(dir).box.classList.remove("done");
      idle.hidden = boxes.size > 0;
    },
  };
}

/**
 * What a line of an agent's output says, for people: an agent that speaks a
 * JSON event stream (Claude Code's stream-json, Codex's and Gemini's JSON) has
 * its text and tool calls shown, not its JSON; any other line as it is.
 */
export function displayLines(line: string): string[] {
  if (line.trim() === "") return [];
  if (!line.startsWith("{")) return [line];
  let ev: Record<string, unknown>;
  try {
    ev = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return [line];
  }
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  const out: string[] = [];
  const message = ev.message as { content?: unknown } | undefined;
  if (Array.isArray(message?.content)) {
    for (const c of message.content as Record<string, unknown>[]) {
      if (c?.type === "text" && str(c.text)) out.push(...str(c.text)!.split("\n").filter((l) => l.trim() !== ""));
      else if (c?.type === "tool_use") out.push(`→ ${str(c.name) ?? "tool"} ${JSON.stringify(c.input ?? {}).slice(0, 160)}`);
      else if (c?.type === "tool_result" && c.is_error === true) out.push(`✗ ${String(typeof c.content === "string" ? c.content : "tool error").slice(0, 160)}`);
    }
    return out;
  }
  if (ev.type === "result") return [`${ev.is_error === true ? "✗" : "✓"} ${(str(ev.result) ?? "").split("\n")[0] ?? ""}`];
  const item = ev.item as Record<string, unknown> | undefined;
  if (item && str(item.text)) return str(item.text)!.split("\n").filter((l) => l.trim() !== "");
  if (item && str(item.command)) return [`$ ${str(item.command)}`];
  if (str(ev.content) && ev.role !== "user") return str(ev.content)!.split("\n").filter((l) => l.trim() !== "");
  if (ev.type === "system" || ev.type === "user" || ev.type === "init" || str(ev.type)?.endsWith(".started")) return [];
  return [line];
}
