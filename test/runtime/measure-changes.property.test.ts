import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { changesSince, takeBaseline } from "../../src/runtime/measure-changes.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const git = (cwd: string, ...args: string[]) => spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

// names that cover nesting, dotfiles, ignored files and ignored directories
const PATHS = ["a", "b.txt", ".dot", "d/x", "d/e/y", "d/.hidden", "ig.log", "d/ig.log", "build/out", "sp ace/é"];
const path = fc.constantFrom(...PATHS);
type Op =
  | { op: "write"; path: string; content: string }
  | { op: "delete"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "chmod"; path: string; exec: boolean }
  | { op: "symlink"; path: string; target: string };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("write" as const), path, content: fc.constantFrom("", "1", "2", "22", "hello\n") }),
  fc.record({ op: fc.constant("delete" as const), path }),
  fc.record({ op: fc.constant("rename" as const), from: path, to: path }),
  fc.record({ op: fc.constant("chmod" as const), path, exec: fc.boolean() }),
  fc.record({ op: fc.constant("symlink" as const), path, target: fc.constantFrom("a", "missing", "d") }),
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
        const d = mkdtempSync(join(tmpdir(), "phaseloop-prop-"));
        dirs.push(d);
        git(d, "init", "-q");
        writeFileSync(join(d, ".gitignore"), "*.log\nbuild/\n");
        apply(d, committed);
        git(d, "add", "-A");
        git(d, "commit", "-qm", "init", "--allow-empty");
        apply(d, dirty);
        const base = takeBaseline(d);
        // the reference: the same work tree, its state at the baseline committed
        const copy = `${d}-copy`;
        dirs.push(copy);
        cpSync(d, copy, { recursive: true, verbatimSymlinks: true, filter: (src) => !src.includes(".phaseloop") });
        git(copy, "add", "-A");
        git(copy, "commit", "-qm", "baseline", "--allow-empty");
        apply(d, during);
        apply(copy, during);
        expect(changesSince(d, base)).toEqual(reference(copy));
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
