/// <reference lib="dom" />
/** Tokens and cost over the run's time: two lines on one small chart, each on its own scale. */
import type { RunView } from "../ui/run-view.ts";
import { formatCost, formatCount, formatDuration, h, s } from "./dom.ts";

const W = 640;
const H = 140;
const PAD = 30;

export function usageChart(): { el: HTMLElement; update(view: RunView): void } {
  const tokens = s("polyline", { class: "line tokens", points: "" });
  const cost = s("polyline", { class: "line cost", points: "" });
  const axis = s("path", { class: "axis", d: `M${PAD},${PAD / 2} V${H - PAD} H${W - PAD / 2}` });
  const tMax = s("text", { x: W - PAD / 2, y: H - 10, class: "tick", "text-anchor": "end" }, "");
  const kTop = s("text", { x: PAD + 4, y: PAD / 2 + 8, class: "tick tokens-tick" }, "");
  const cTop = s("text", { x: W - PAD / 2, y: PAD / 2 + 8, class: "tick cost-tick", "text-anchor": "end" }, "");
  const svg = s("svg", { class: "usage", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "tokens and cost over time" }, axis, tokens, cost, tMax, kTop, cTop);
  const legend = h("p", { class: "legend" });
  const el = h("div", { class: "usage-wrap" }, svg, legend);

  function update(view: RunView): void {
    const pts = view.usage;
    const last = pts[pts.length - 1];
    const tEnd = Math.max(1, view.now, last?.t ?? 0);
    const kMax = Math.max(1, ...pts.map((p) => p.tokens));
    const cMax = Math.max(1e-9, ...pts.map((p) => p.cost_usd));
    const x = (t: number) => PAD + (t / tEnd) * (W - PAD * 1.5);
    const y = (v: number, max: number) => H - PAD - (v / max) * (H - PAD * 1.5);
    tokens.setAttribute("points", [`${PAD},${H - PAD}`, ...pts.map((p) => `${x(p.t).toFixed(1)},${y(p.tokens, kMax).toFixed(1)}`)].join(" "));
    cost.setAttribute("points", [`${PAD},${H - PAD}`, ...pts.map((p) => `${x(p.t).toFixed(1)},${y(p.cost_usd, cMax).toFixed(1)}`)].join(" "));
    tMax.textContent = formatDuration(tEnd);
    kTop.textContent = view.summary.tokens > 0 ? `${formatCount(kMax)} tokens` : "";
    cTop.textContent = view.summary.cost_usd > 0 ? formatCost(cMax) : "";
    legend.textContent = `tokens ${formatCount(view.summary.tokens)} (blue) · cost ${formatCost(view.summary.cost_usd)} (orange) · ${pts.length} points`;
  }
  return { el, update };
}
