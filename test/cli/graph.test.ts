import { readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

/**
 * A structural check of the Mermaid subset `graph` emits: a flowchart header,
 * node declarations with quoted labels, edges with optional quoted labels, and
 * class lines. Unquoted text in a label, or a quote inside one, breaks Mermaid.
 */
export function checkMermaid(text: string): string[] {
  const problems: string[] = [];
  const lines = text.trimEnd().split("\n");
  if (lines[0] !== "flowchart TD") problems.push("the first line must be the flowchart header");
  const id = String.raw`[A-Za-z_][A-Za-z0-9_]*`;
  const label = String.raw`"[^"\n]*"`;
  const node = new RegExp(String.raw`^  ${id}(\[${label}\]|\(\(${label}\)\)|\(\[${label}\]\))$`);
  const edge = new RegExp(String.raw`^  ${id}(\(\[${label}\]\))? (-->|-\.->)(\|${label}\|)? ${id}$`);
  const declared = new Set<string>();
  for (const line of lines.slice(1)) {
    if (node.test(line)) declared.add(line.trim().split(/[[(]/)[0]!);
    else if (edge.test(line)) {
      for (const m of line.trim().replace(/\|"[^"]*"\|/, "").replace(/\(\[[^\]]*\]\)/, "").split(/ -\.?-> /)) if (!declared.has(m)) problems.push(`edge to an undeclared node: ${m}`);
    } else if (!/^  classDef \w+ [\w:#,]+$/.test(line) && !/^  class [\w,]+ \w+$/.test(line)) problems.push(`not Mermaid this checker knows: ${line}`);
  }
  return problems;
}

describe("phaseloop graph", () => {
  for (const recipe of readdirSync(join(ROOT, "pipelines")).filter((f) => f.endsWith(".yaml"))) {
    it(`draws ${recipe} as Mermaid that parses`, () => {
      const r = cli(["graph", join("pipelines", recipe)], ROOT);
      expect(r.code).toBe(0);
      expect(checkMermaid(r.stdout)).toEqual([]);
    });
  }
  it("draws DOT on request and escapes labels", () => {
    const r = cli(["graph", "pipelines/hailstone.yaml", "--format", "dot"], ROOT);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^digraph "hailstone" \{/);
    expect(r.stdout).toContain(`"verify" -> "(complete)" [label="output.last == '1'"];`);
  });
  it("checks the checker: a broken label is caught", () => {
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a -->|"say "hi""| a\n')).not.toEqual([]);
  });
});
