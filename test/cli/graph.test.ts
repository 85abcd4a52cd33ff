import { readdirSync } from "node:fs";
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
