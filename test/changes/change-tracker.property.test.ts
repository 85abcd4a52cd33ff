import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { ChangeTracker } from "../../src/changes/change-tracker.ts";
import { changesSince, takeBaseline, type Baseline } from "../../src/changes/measure-changes.ts";
import { scopeChangesSince, takeScopeBaseline } from "../../src/changes/write-scope-baseline.ts";
import { applyOps, git, tempDirs, workdirOp, type Op } from "./workdir-ops.ts";

const temp = tempDirs("phaseloop-tracker-");

// names that cover nesting, dotfiles, ignored files and ignored directories, and the ignore file itself
const PATHS = ["a", "b.txt", ".dot", "d/x", "d/e/y", "ig.log", "d/ig.log", "build/out", "sp ace/é", "constructor"];
const op = workdirOp(PATHS, true);

/** What happens in a run between two looks at the workdir. */
type Step =
  | { kind: "phase"; scoped: boolean; ops: Op[] }
  | { kind: "between"; ops: Op[] } // a hook, the task file, an output file removed
  | { kind: "iteration" };
const ops = fc.array(op, { maxLength: 4 });
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("phase" as const), scoped: fc.boolean(), ops }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant("between" as const), ops }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("iteration" as const) }), weight: 2 },
);

function setUp(kind: "git" | "plain", committed: Op[], dirty: Op[]): string {
  const d = temp.make();
  writeFileSync(join(d, ".gitignore"), "*.log\nbuild/\n");
  applyOps(d, committed);
  if (kind === "git") {
    git(d, "init", "-q");
    git(d, "add", "-A");
    git(d, "commit", "-qm", "init", "--allow-empty");
  }
  applyOps(d, dirty);
  return d;
}

/**
 * The tracker, which derives each baseline from the last look when nothing
 * else ran since, answers as fresh baselines taken by a full scan at the same
 * moments do (the measure as it was), on a copy of the same work tree.
 */
function runSteps(kind: "git" | "plain", committed: Op[], dirty: Op[], steps: Step[]): void {
  const d = setUp(kind, committed, dirty);
  const ref = temp.track(`${d}-ref`);
  cpSync(d, ref, { recursive: true, verbatimSymlinks: true });
  const tracker = new ChangeTracker(nodeHost, d);
  tracker.beginIteration();
  let refBase: Baseline = takeBaseline(nodeHost, ref);
  for (const s of steps) {
    if (s.kind === "iteration") {
      tracker.beginIteration();
      refBase = takeBaseline(nodeHost, ref);
    } else if (s.kind === "between") {
      tracker.touched();
      applyOps(d, s.ops);
      applyOps(ref, s.ops);
    } else {
      const scope = tracker.startPhase(s.scoped);
      const refScope = s.scoped ? takeScopeBaseline(nodeHost, ref) : undefined;
      applyOps(d, s.ops);
      applyOps(ref, s.ops);
      const r = tracker.endPhase(scope);
      expect(r.changes).toEqual(changesSince(nodeHost, ref, refBase));
      if (refScope) expect(r.scope).toEqual(scopeChangesSince(nodeHost, ref, refScope));
    }
  }
}

for (const kind of ["git", "plain"] as const) {
  describe(`iteration changes with baselines taken over from the last look (${kind})`, () => {
    it("are the changes fresh baselines find, through phases, write scopes, hooks and iterations", () => {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 5 }), fc.array(op, { maxLength: 4 }), fc.array(step, { minLength: 1, maxLength: 7 }), (committed, dirty, steps) => runSteps(kind, committed, dirty, steps)),
        { numRuns: kind === "git" ? 30 : 40 },
      );
    }, 240_000);

    it("a file the ignore rules came to ignore before the iteration began is no change when it goes", () => {
      runSteps(kind, [], [], [
        { kind: "phase", scoped: false, ops: [{ op: "write", path: "b.txt", content: "" }] },
        { kind: "phase", scoped: true, ops: [{ op: "ignore", rules: "*.log\nbuild/\nb.txt\n" }] },
        { kind: "iteration" },
        { kind: "phase", scoped: false, ops: [{ op: "delete", path: "b.txt" }] },
      ]);
    });

    it("a file the ignore rules came to ignore in the last phase of the previous iteration is no change when it is written", () => {
      runSteps(kind, [{ op: "write", path: "build/out", content: "2" }], [{ op: "ignore", rules: "*.log\n" }], [
        { kind: "phase", scoped: false, ops: [{ op: "ignore", rules: "*.log\nbuild/\n" }] },
        { kind: "iteration" },
        { kind: "phase", scoped: false, ops: [{ op: "write", path: "build/out", content: "" }] },
        { kind: "iteration" },
      ]);
    });

    it("a file made again where the iteration began without it, and that the ignore rules now ignore, is no change", () => {
      runSteps(kind, [{ op: "write", path: "b.txt", content: "" }], [], [
        { kind: "phase", scoped: false, ops: [{ op: "rename", from: "b.txt", to: "a" }] },
        { kind: "iteration" },
        { kind: "phase", scoped: false, ops: [{ op: "ignore", rules: "*.log\nbuild/\nb.txt\n" }] },
        { kind: "phase", scoped: false, ops: [{ op: "write", path: "b.txt", content: "" }] },
      ]);
    });
  });
}

describe("iteration changes with baselines taken over from the last look (regressions)", () => {
  it("does not count a hook's change between iterations as the next iteration's progress", () => {
    const d = setUp("git", [{ op: "write", path: "a", content: "1" }], []);
    const t = new ChangeTracker(nodeHost, d);
    t.beginIteration();
    t.startPhase(false);
    writeFileSync(join(d, "a"), "2");
    expect(t.endPhase().changes).toEqual(["a"]);
    t.touched(); // the iteration's end hook
    writeFileSync(join(d, "b.txt"), "by the hook");
    t.beginIteration();
    t.startPhase(false);
    expect(t.endPhase().changes).toEqual([]);
  });

  it("counts a hook's change between two phases of an iteration, and a command phase's, in that iteration", () => {
    for (const kind of ["git", "plain"] as const) {
      const d = setUp(kind, [{ op: "write", path: "a", content: "1" }], []);
      const t = new ChangeTracker(nodeHost, d);
      t.beginIteration();
      t.startPhase(false);
      expect(t.endPhase().changes).toEqual([]);
      t.touched();
      writeFileSync(join(d, "b.txt"), "by the hook");
      t.startPhase(false);
      writeFileSync(join(d, "a"), "by the command");
      expect(t.endPhase().changes).toEqual(["a", "b.txt"]);
      t.beginIteration();
      t.startPhase(false);
      writeFileSync(join(d, "a"), "1"); // back as it was before the previous iteration: still a change of this one
      expect(t.endPhase().changes).toEqual(["a"]);
      t.beginIteration();
      t.startPhase(false);
      expect(t.endPhase().changes).toEqual([]);
    }
  });

  it("takes a write scope's baseline after a hook by a scan: the hook's change is not the phase's", () => {
    const d = setUp("git", [{ op: "write", path: "a", content: "1" }], []);
    const t = new ChangeTracker(nodeHost, d);
    t.beginIteration();
    t.startPhase(false);
    writeFileSync(join(d, "a"), "2");
    t.endPhase();
    t.touched();
    writeFileSync(join(d, "x.log"), "ignored, by a hook");
    writeFileSync(join(d, "b.txt"), "by a hook");
    const scope = t.startPhase(true);
    writeFileSync(join(d, "a"), "3");
    const r = t.endPhase(scope);
    expect(r.scope).toEqual({ paths: ["a"], internals: [] });
    expect(r.changes).toEqual(["a", "b.txt"]);
  });
});
