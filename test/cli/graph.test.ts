import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { checkMermaid } from "../machine/mermaid-check.ts";
import { cli, ensureBuilt, ROOT } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

describe("phaseloop graph", () => {
  for (const recipe of readdirSync(join(ROOT, "pipelines")).filter((f) => f.endsWith(".yaml"))) {
    it(`draws ${recipe} as Mermaid that parses and DOT with the same nodes and edges, each reached, each drawn once`, () => {
      const r = cli(["graph", join("pipelines", recipe)], ROOT);
      expect(r.code).toBe(0);
      expect(checkMermaid(r.stdout)).toEqual([]);
      const dot = cli(["graph", join("pipelines", recipe), "--format", "dot"], ROOT).stdout;
      const nodes = (text: string, re: RegExp) => [...text.matchAll(re)].map((m) => m[1]!).sort();
      const merNodes = nodes(r.stdout, /^ {2}([A-Za-z_]\w*)[[({]/gm);
      expect(merNodes).toEqual(nodes(dot, /^ {2}([A-Za-z_]\w*) \[/gm));
      const merEdges = [...r.stdout.matchAll(/^ {2}(\w+) -\.?->(?:\|"([^"]*)"\|)? (\w+)$/gm)].map((m) => `${m[1]} > ${m[3]}`);
      const dotEdges = [...dot.matchAll(/^ {2}(\w+) -> (\w+) \[/gm)].map((m) => `${m[1]} > ${m[2]}`);
      expect(merEdges.sort()).toEqual(dotEdges.sort());
      const labelled = [...r.stdout.matchAll(/^ {2}(\w+ -\.?->(?:\|"[^"]*"\|)? \w+)$/gm)].map((m) => m[1]);
      expect(new Set(labelled).size).toBe(labelled.length);
      for (const n of merNodes) if (n !== "start") expect(merEdges.some((e) => e.endsWith(` > ${n}`)), `${recipe}: ${n} has a way in`).toBe(true);
      // no arrow carries a label longer than a short phrase
      for (const m of r.stdout.matchAll(/\|"([^"]*)"\|/g)) expect(m[1]!.replace(/#\w+;/g, "x").length).toBeLessThanOrEqual(90);
    });
  }
  it("keeps a picture of every recipe's loop in docs/graphs, shown on the recipes page", () => {
    const page = readFileSync(join(ROOT, "docs/recipes.md"), "utf8");
    for (const recipe of readdirSync(join(ROOT, "pipelines")).filter((f) => f.endsWith(".yaml"))) {
      const png = `graphs/${recipe.replace(/\.yaml$/, "")}.png`;
      expect(readFileSync(join(ROOT, "docs", png)).subarray(1, 4).toString()).toBe("PNG");
      expect(page).toContain(`(${png})`);
    }
  });
  it("refuses an invalid pipeline with its diagnostics and exit 2", () => {
    const dir = mkdtempSync(join(tmpdir(), "phaseloop-graph-"));
    writeFileSync(join(dir, "p.yaml"), "phaseloop: 1\nname: x\nphases:\n  a:\n    run: 'true'\n    next: [{ goto: nowhere }]\nstop: { max_iterations: 1 }\n");
    const r = cli(["graph", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("p.yaml");
  });
  it("refuses an unknown format and a missing pipeline argument with exit 2", () => {
    expect(cli(["graph", "pipelines/hailstone.yaml", "--format", "svg"], ROOT).code).toBe(2);
    expect(cli(["graph"], ROOT).code).toBe(2);
  });
  it("draws DOT on request and escapes labels", () => {
    const r = cli(["graph", "pipelines/hailstone.yaml", "--format", "dot"], ROOT);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^digraph "hailstone" \{/);
    expect(r.stdout).toContain(`p_verify -> complete [label="output.last == '1'"];`);
  });
  it("checks the checker: a broken label is caught", () => {
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a -->|"say "hi""| a\n')).not.toEqual([]);
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a -->|"#1 thing"| a\n')).not.toEqual([]);
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a --> b\n')).toEqual(["edge to an undeclared node: b"]);
    expect(checkMermaid('flowchart TD\n  a[x]\n')).not.toEqual([]);
  });
});
