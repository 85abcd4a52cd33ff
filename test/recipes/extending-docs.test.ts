/** Every extending file docs/recipes.md shows validates against phaseloop's own recipes, installed as a package. */
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const docs = readFileSync(join(ROOT, "docs/recipes.md"), "utf8");
const section = docs.slice(docs.indexOf("## Your system, in a few lines"));
const examples = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe("the extending files in docs/recipes.md", () => {
  it("are there, one per seed system and the include", () => {
    expect(examples.length).toBe(6);
  });
  for (const text of examples) {
    const name = /^name: (\S+)/m.exec(text)![1]!;
    it(`${name} validates, and merges as it says`, () => {
      const dir = tempDir();
      mkdirSync(join(dir, "node_modules"));
      symlinkSync(ROOT, join(dir, "node_modules", "phaseloop"));
      write(dir, { [`${name}.yaml`]: text, "team/agents.yaml": "agents:\n  worker: { command: null, prompt_via: null, preset: codex, model: gpt-5-codex }\n" });
      const r = cli(["validate", `${name}.yaml`], dir);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const printed = cli(["validate", "--print", `${name}.yaml`], dir);
      expect(printed.stdout).toContain(`name: ${name}`);
    });
  }
});
