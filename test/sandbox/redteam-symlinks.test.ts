/**
 * Symlinks at phaseloop's own hand: an agent that may write `.claude` or
 * `.loop` links them out of the workdir (to `~/.claude`, `~/.bashrc`);
 * phaseloop's removals and the recipe's own appending phase must not follow.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parentsInside, removeInside } from "../../src/host/remove-inside.ts";
import { ROOT } from "../cli/cli-helpers.ts";

const root = mkdtempSync(join(tmpdir(), "pl-redteam-links-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function setup(name: string) {
  const home = join(root, name, "home");
  const work = join(root, name, "work");
  mkdirSync(join(home, ".claude", "commands"), { recursive: true });
  writeFileSync(join(home, ".claude", "commands", "mine.md"), "the user's own\n");
  writeFileSync(join(home, ".claude", "settings.json"), "{}\n");
  writeFileSync(join(home, ".bashrc"), "original\n");
  mkdirSync(work, { recursive: true });
  return { home, work };
}

describe("phaseloop's removals do not follow a link out of the workdir", () => {
  it("removing .claude/commands where .claude links to ~/.claude leaves the user's own", () => {
    const { home, work } = setup("claude");
    symlinkSync(join(home, ".claude"), join(work, ".claude"));
    expect(parentsInside(work, ".claude/commands")).toBe(false);
    expect(removeInside(work, ".claude/commands", { recursive: true })).toBe(false);
    expect(removeInside(work, join(work, ".claude", "settings.json"))).toBe(false);
    expect(readFileSync(join(home, ".claude", "commands", "mine.md"), "utf8")).toBe("the user's own\n");
    expect(existsSync(join(home, ".claude", "settings.json"))).toBe(true);
    // the link itself is the workdir's, and goes as a link
    expect(removeInside(work, ".claude", { recursive: true })).toBe(true);
    expect(existsSync(join(work, ".claude"))).toBe(false);
    expect(existsSync(join(home, ".claude", "commands", "mine.md"))).toBe(true);
  });

  it("a real folder inside is removed as before, and paths outside are refused", () => {
    const { work } = setup("plain");
    mkdirSync(join(work, "a", "b"), { recursive: true });
    writeFileSync(join(work, "a", "b", "f"), "x");
    expect(removeInside(work, "a/b", { recursive: true })).toBe(true);
    expect(existsSync(join(work, "a", "b"))).toBe(false);
    expect(parentsInside(work, "../x")).toBe(false);
    expect(parentsInside(work, "/etc/passwd")).toBe(false);
  });
});

describe("the generator-evaluator recipe's own progress phase", () => {
  const doc = parse(readFileSync(join(ROOT, "pipelines", "generator-evaluator.yaml"), "utf8")) as { phases: { progress: { run: string[] } } };
  const argv = doc.phases.progress.run;
  const env = { PATH: process.env.PATH, STORY: "US-1", TITLE: "t", ITERATION: "1", VERDICT: "PASS", REASON: "" };

  it.each([
    ["progress.md links to ~/.bashrc", (work: string, home: string) => (mkdirSync(join(work, ".loop")), symlinkSync(join(home, ".bashrc"), join(work, ".loop", "progress.md")))],
    [".loop links to the home folder", (work: string, home: string) => symlinkSync(home, join(work, ".loop"))],
  ])("does not append when %s", (_what, plant) => {
    const { home, work } = setup(`recipe-${_what.replace(/\W/g, "")}`);
    writeFileSync(join(home, "progress.md"), "original\n");
    plant(work, home);
    const r = spawnSync(argv[0]!, argv.slice(1), { cwd: work, env, encoding: "utf8" });
    expect(r.status).not.toBe(0);
    expect(readFileSync(join(home, ".bashrc"), "utf8")).toBe("original\n");
    expect(readFileSync(join(home, "progress.md"), "utf8")).toBe("original\n");
  });

  it("appends to a real file as before", () => {
    const { work } = setup("recipe-plain");
    const r = spawnSync(argv[0]!, argv.slice(1), { cwd: work, env, encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(readFileSync(join(work, ".loop", "progress.md"), "utf8")).toContain("### US-1 — t");
  });
});
