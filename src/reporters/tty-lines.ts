/**
 * Lines the terminal view writes outside a live list: fitted to the
 * terminal's width, and an iteration that ended before it was drawn, written
 * as the lines its list would have left on the screen.
 */
import { plural, type Paint } from "../run/format-event-line.ts";
import type { IterationView, StepEnd } from "./tty-iteration.ts";

/** A line cut to the terminal's width with an ellipsis (colour codes kept, not counted), never wrapped. */
export function fitLine(text: string, width: number): string {
  // eslint-disable-next-line no-control-regex
  const sgr = /(\u001b\[[0-9;]*m)/;
  if ([...text.split(sgr).filter((p) => !sgr.test(p)).join("")].length <= width) return text;
  let shown = 0;
  let out = "";
  for (const part of text.split(sgr)) {
    if (sgr.test(part)) {
      out += part;
      continue;
    }
    for (const ch of part) {
      if (shown === width - 1) return `${out}…${text.includes("\u001b[") ? "\u001b[0m" : ""}`;
      out += ch;
      shown += 1;
    }
  }
  return out;
}

const ICON: Record<StepEnd["kind"], string> = { ok: "✔", failed: "✖", skipped: "↓" };

/**
 * An ended iteration as its list leaves it: the iteration, crossed when a
 * phase failed or was cut short, then its steps, the ones past `maxSteps`
 * summed up in one line.
 */
export function endedIterationLines(view: IterationView, title: string, paint: Paint, maxSteps: number): string[] {
  const crossed = view.failures > 0 || view.cutShort !== null;
  const lines = [`${crossed ? paint.red("✖") : "✔"} ${title}`];
  const shown = Math.min(view.steps.length, maxSteps - 1);
  for (const step of view.steps.slice(0, shown)) {
    const end = step.end ?? { kind: "ok", title: step.title() };
    lines.push(`  ${ICON[end.kind]} ${end.title}`);
  }
  if (view.steps.length > shown) lines.push(`  ✔ ${paint.dim(plural(view.steps.length - shown, "more step"))}`);
  return lines;
}
