import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT, tempDir } from "./cli-helpers.ts";

describe("the CLI bundle", () => {
  it("is all ASCII, so V8 keeps its sources as one-byte strings (half the memory a loop forks with)", () => {
    ensureBuilt();
    const files = [join(ROOT, "dist/cli.cjs"), ...readdirSync(join(ROOT, "dist/chunks")).map((f) => join(ROOT, "dist/chunks", f))];
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      const at = text.search(/[^\x00-\x7f]/);
      expect(at, `${file} holds ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 10))}`).toBe(-1);
    }
  });

  it("still prints the characters it escaped", () => {
    ensureBuilt();
    const dir = tempDir();
    // the plain lines join their parts with a middle dot
    const run = cli(["run", join(ROOT, "pipelines/hailstone.yaml"), "--param", "start=3", "--reporter", "plain", "--workdir", dir, "--sandbox", "off"], dir);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(" \u00b7 ");
  });
});
