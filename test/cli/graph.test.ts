import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { checkMermaid } from "../machine/mermaid-check.ts";
import { cli, ensureBuilt, ROOT } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

describe("phaseloop graph", () => {
  for (const recipe of readdirSync(join(ROOT, "pipelines")).filter((f) => f.endsWith(".yaml"))) {
    it(`draws ${recipe} as Mermaid that parses`, () => {
      const r = cli(["graph", join("pipelines", recipe)], ROOT);
      expect(r.code).toBe(0);
      expect(checkMermaid(r.stdout)).toEqual([]);
    });
  }
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
    expect(r.stdout).toContain(`"verify" -> "(complete)" [label="output.last == '1'"];`);
  });
  it("checks the checker: a broken label is caught", () => {
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a -->|"say "hi""| a\n')).not.toEqual([]);
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a -->|"#1 thing"| a\n')).not.toEqual([]);
    expect(checkMermaid('flowchart TD\n  a["x"]\n  a --> b\n')).toEqual(["edge to an undeclared node: b"]);
    expect(checkMermaid('flowchart TD\n  a[x]\n')).not.toEqual([]);
  });
});
