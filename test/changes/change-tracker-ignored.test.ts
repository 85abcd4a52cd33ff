import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { ChangeTracker } from "../../src/changes/change-tracker.ts";
import { git, tempDirs } from "./workdir-ops.ts";

const temp = tempDirs("phaseloop-claimed-");

/** A repository whose .gitignore lists the file the phase's write globs name (the hailstone recipe's case). */
function repo(): string {
  const d = temp.make();
  writeFileSync(join(d, ".gitignore"), "seq.txt\n*.log\n");
  writeFileSync(join(d, "README.md"), "x\n");
  git(d, "init", "-q");
  git(d, "add", "-A");
  git(d, "commit", "-qm", "init");
  return d;
}

const inGlobs = (p: string) => p === "seq.txt";

describe("an ignored file the write globs name is the phase's work", () => {
  it("counts in the iteration's changes after the phase, and after later phases of the iteration, until a new iteration", () => {
    const d = repo();
    const t = new ChangeTracker(nodeHost, d);
    t.beginIteration();
    const scope = t.startPhase(true);
    writeFileSync(join(d, "seq.txt"), "6\n");
    writeFileSync(join(d, "debug.log"), "noise\n"); // ignored, and no glob names it
    expect(t.endPhase(scope, inGlobs).changes).toEqual(["seq.txt"]);
    // a command phase after it (no write scope) still sees the iteration's work
    t.startPhase(false);
    expect(t.endPhase(undefined).changes).toEqual(["seq.txt"]);
    // the next iteration starts from the file as it is: nothing changed yet
    t.beginIteration();
    t.startPhase(false);
    expect(t.endPhase(undefined).changes).toEqual([]);
    const again = t.startPhase(true);
    writeFileSync(join(d, "seq.txt"), "6\n3\n");
    expect(t.endPhase(again, inGlobs).changes).toEqual(["seq.txt"]);
  });

  it("counts a file the phase created or deleted, and not one its globs do not name", () => {
    const d = repo();
    writeFileSync(join(d, "seq.txt"), "1\n");
    const t = new ChangeTracker(nodeHost, d);
    t.beginIteration();
    const scope = t.startPhase(true);
    rmSync(join(d, "seq.txt"));
    expect(t.endPhase(scope, inGlobs).changes).toEqual(["seq.txt"]);
    const other = t.startPhase(true);
    writeFileSync(join(d, "seq.txt"), "1\n");
    writeFileSync(join(d, "a.log"), "1\n");
    const r = t.endPhase(other, () => false);
    // claimed by the first phase (and changed from its state before it); a.log is nobody's work
    expect(r.changes).toEqual(["seq.txt"]);
    expect(r.scope?.paths).toContain("a.log");
  });
});
