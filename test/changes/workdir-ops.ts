/**
 * Generated operations on a work tree (writes, deletions, renames, mode
 * changes, symlinks, a new .gitignore) for the change-measurement
 * properties, and git in a test's own temp directories.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll } from "vitest";

export type Op =
  | { op: "write"; path: string; content: string }
  | { op: "delete"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "chmod"; path: string; exec: boolean }
  | { op: "symlink"; path: string; target: string }
  | { op: "ignore"; rules: string };

/** One operation on the given paths; with `ignores`, a new .gitignore now and then too. */
export function workdirOp(paths: string[], ignores = false): fc.Arbitrary<Op> {
  const path = fc.constantFrom(...paths);
  return fc.oneof(
    { arbitrary: fc.record({ op: fc.constant("write" as const), path, content: fc.constantFrom("", "1", "2", "22", "hello\n") }), weight: 4 },
    { arbitrary: fc.record({ op: fc.constant("delete" as const), path }), weight: 2 },
    { arbitrary: fc.record({ op: fc.constant("rename" as const), from: path, to: path }), weight: 1 },
    { arbitrary: fc.record({ op: fc.constant("chmod" as const), path, exec: fc.boolean() }), weight: 1 },
    { arbitrary: fc.record({ op: fc.constant("symlink" as const), path, target: fc.constantFrom("a", "missing", "d") }), weight: 1 },
    ...(ignores ? [{ arbitrary: fc.record({ op: fc.constant("ignore" as const), rules: fc.constantFrom("*.log\nbuild/\n", "*.log\n", "*.log\nbuild/\nb.txt\n") }), weight: 1 }] : []),
  );
}

/** Apply the operations to the tree at `root`; one that cannot apply is passed over. */
export function applyOps(root: string, ops: Op[]): void {
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

/** git with a committer, in `cwd`. */
export const git = (cwd: string, ...args: string[]) => spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

/** Temp directories made with `prefix` (or named and tracked), removed after the file's tests. */
export function tempDirs(prefix: string): { make: () => string; track: (dir: string) => string } {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const track = (dir: string) => (dirs.push(dir), dir);
  return { make: () => track(mkdtempSync(join(tmpdir(), prefix))), track };
}
