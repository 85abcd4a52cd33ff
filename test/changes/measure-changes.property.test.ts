import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { changesSince, takeBaseline } from "../../src/changes/measure-changes.ts";
import { applyOps, git, tempDirs, workdirOp } from "./workdir-ops.ts";

const temp = tempDirs("phaseloop-prop-");

// names that cover nesting, dotfiles, ignored files and ignored directories
const PATHS = ["a", "b.txt", ".dot", "d/x", "d/e/y", "d/.hidden", "ig.log", "d/ig.log", "build/out", "sp ace/é"];
const op = workdirOp(PATHS);

/** What git itself says changed in the copy since its baseline was committed. */
function reference(copy: string): string[] {
  const out = git(copy, "status", "--porcelain=v1", "-z", "-uall", "--no-renames").stdout;
  return out
    .split("\0")
    .filter(Boolean)
    .map((l) => l.slice(3))
    .sort();
}

describe("measured changes in git, against git status on a copy", () => {
  it("names exactly the files git status names, after any operations", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 6 }), fc.array(op, { maxLength: 6 }), fc.array(op, { maxLength: 8 }), (committed, dirty, during) => {
        const d = temp.make();
        git(d, "init", "-q");
        writeFileSync(join(d, ".gitignore"), "*.log\nbuild/\n");
        applyOps(d, committed);
        git(d, "add", "-A");
        git(d, "commit", "-qm", "init", "--allow-empty");
        applyOps(d, dirty);
        const base = takeBaseline(nodeHost, d);
        // the reference: the same work tree, its state at the baseline committed
        const copy = temp.track(`${d}-copy`);
        cpSync(d, copy, { recursive: true, verbatimSymlinks: true, filter: (src) => !src.includes(".phaseloop") });
        git(copy, "add", "-A");
        git(copy, "commit", "-qm", "baseline", "--allow-empty");
        applyOps(d, during);
        applyOps(copy, during);
        expect(changesSince(nodeHost, d, base)).toEqual(reference(copy));
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
