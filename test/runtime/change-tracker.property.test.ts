import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ChangeTracker } from "../../src/runtime/change-tracker.ts";
import { changesSince, takeBaseline, type Baseline } from "../../src/runtime/measure-changes.ts";
import { scopeChangesSince, takeScopeBaseline } from "../../src/runtime/write-scope-baseline.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const git = (cwd: string, ...args: string[]) => spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

// names that cover nesting, dotfiles, ignored files and ignored directories, and the ignore file itself
const PATHS = ["a", "b.txt", ".dot", "d/x", "d/e/y", "ig.log", "d/ig.log", "build/out", "sp ace/é", "constructor"];
const path = fc.constantFrom(...PATHS);
type Op =
  | { op: "write"; path: string; content: string }
  | { op: "delete"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "chmod"; path: string; exec: boolean }
  | { op: "symlink"; path: string; target: string }
  | { op: "ignore"; rules: string };
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant("write" as const), path, content: fc.constantFrom("", "1", "2", "22", "hello\n") }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant("delete" as const), path }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("rename" as const), from: path, to: path }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("chmod" as const), path, exec: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("symlink" as const), path, target: fc.constantFrom("a", "missing", "d") }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("ignore" as const), rules: fc.constantFrom("*.log\nbuild/\n", "*.log\n", "*.log\nbuild/\nb.txt\n") }), weight: 1 },
);

function apply(root: string, ops: Op[]): void {
  for (const o of ops) {
    try {
      if (o.op === "write") {
        mkdirSync(dirname(join(root, o.path)), { recursive: true });
        writeFileSync(join(root, o.path), o.content);
      } else if (o.op === "delete") rmSync(join(root, o.path), { force: true, recursive: true });
      else if (o.op === "rename") {
        mkdirSync(dirname(join(root, o.to)), { recursive: true });
        renameSync(join(root, o.from), join(root, o.to));
      } else if (o.op === "chmod") chmodSync(join(root, o.path), o.exec ? 0o755 : 0o644);
      else if (o.op === "ignore") writeFileSync(join(root, ".gitignore"), o.rules);
      else {
        mkdirSync(dirname(join(root, o.path)), { recursive: true });
        rmSync(join(root, o.path), { force: true, recursive: true });
        symlinkSync(o.target, join(root, o.path));
      }
    } catch {
      // the same operation fails the same way on both copies
    }
  }
}

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
  const d = mkdtempSync(join(tmpdir(), "phaseloop-tracker-"));
  dirs.push(d);
  writeFileSync(join(d, ".gitignore"), "*.log\nbuild/\n");
  apply(d, committed);
  if (kind === "git") {
    git(d, "init", "-q");
    git(d, "add", "-A");
    git(d, "commit", "-qm", "init", "--allow-empty");
  }
  apply(d, dirty);
  return d;
}

/**
 * The tracker, which derives each baseline from the last look when nothing
 * else ran since, answers as fresh baselines taken by a full scan at the same
 * moments do (the measure as it was), on a copy of the same work tree.
 */
function runSteps(kind: "git" | "plain", committed: Op[], dirty: Op[], steps: Step[]): void {
  const d = setUp(kind, committed, dirty);
  const ref = `${d}-ref`;
  dirs.push(ref);
  cpSync(d, ref, { recursive: true, verbatimSymlinks: true });
  const tracker = new ChangeTracker(d);
  tracker.beginIteration();
  let refBase: Baseline = takeBaseline(ref);
  for (const s of steps) {
    if (s.kind === "iteration") {
      tracker.beginIteration();
      refBase = takeBaseline(ref);
    } else if (s.kind === "between") {
      tracker.touched();
      apply(d, s.ops);
      apply(ref, s.ops);
    } else {
      const scope = tracker.startPhase(s.scoped);
      const refScope = s.scoped ? takeScopeBaseline(ref) : undefined;
      apply(d, s.ops);
      apply(ref, s.ops);
      const r = tracker.endPhase(scope);
      expect(r.changes).toEqual(changesSince(ref, refBase));
      if (refScope) expect(r.scope).toEqual(scopeChangesSince(ref, refScope));
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
  });
}

describe("iteration changes with baselines taken over from the last look (regressions)", () => {
  it("does not count a hook's change between iterations as the next iteration's progress", () => {
    const d = setUp("git", [{ op: "write", path: "a", content: "1" }], []);
    const t = new ChangeTracker(d);
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
      const t = new ChangeTracker(d);
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
    const t = new ChangeTracker(d);
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
