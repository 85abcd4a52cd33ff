/**
 * After a fenced phase, phaseloop removes what the phase made at protected names (`.git`,
 * `.claude/commands`, …). An agent that may write the workdir can first link `.claude` to the
 * user's `~/.claude`: the removal must then leave the user's folder alone.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { anchorsOf, undoProtected } from "../../src/host/fence-undo.ts";

const root = mkdtempSync(join(tmpdir(), "pl-undo-protected-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function setup(name: string) {
  const home = join(root, name, "home");
  const work = join(root, name, "work");
  mkdirSync(join(home, ".claude", "commands"), { recursive: true });
  writeFileSync(join(home, ".claude", "commands", "mine.md"), "the user's own\n");
  mkdirSync(work, { recursive: true });
  const absent = [join(work, ".claude", "commands"), join(work, ".claude", "settings.json"), join(work, ".git")];
  return { home, work, absent, anchors: anchorsOf(absent) };
}

describe("undoing what a phase made at protected names", () => {
  it("never goes through a link the phase made on the way", () => {
    const { home, work, absent, anchors } = setup("link");
    symlinkSync(join(home, ".claude"), join(work, ".claude")); // the phase's doing
    undoProtected(absent, anchors);
    expect(readFileSync(join(home, ".claude", "commands", "mine.md"), "utf8")).toBe("the user's own\n");
  });

  it("removes what the phase made in real folders, and a name that is itself a link as the link", () => {
    const { home, work, absent, anchors } = setup("real");
    mkdirSync(join(work, ".claude", "commands"), { recursive: true });
    writeFileSync(join(work, ".claude", "commands", "x.md"), "planted\n");
    symlinkSync(join(home, ".claude"), join(work, ".git"));
    undoProtected(absent, anchors);
    expect(existsSync(join(work, ".claude", "commands"))).toBe(false);
    expect(existsSync(join(work, ".git"))).toBe(false);
    expect(existsSync(join(home, ".claude", "commands", "mine.md"))).toBe(true);
  });

  it("does nothing when the folder it started from was moved for a link", () => {
    const { home, work, absent, anchors } = setup("moved");
    rmSync(work, { recursive: true });
    symlinkSync(home, work);
    undoProtected(absent, anchors);
    expect(existsSync(join(home, ".claude", "commands", "mine.md"))).toBe(true);
  });
});
