import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { diffSnapshots, snapshotFiles } from "../../src/changes/file-snapshot.ts";
import { watchedSnapshot, type SnapshotLook } from "../../src/changes/snapshot-update.ts";
import { TreeWatch } from "../../src/changes/tree-watch.ts";
import { applyOps, tempDirs, workdirOp, type Op } from "./workdir-ops.ts";
import { skipped } from "../skip-reason.ts";

const temp = tempDirs("phaseloop-snapshot-update-");
const SKIP = new Set([".git", "node_modules", ".phaseloop"]);
/** Files and folders at several depths, names the snapshot skips as folders but not as files, a name with a space. */
const PATHS = ["a", "b.txt", "d", "d/x", "d/e", "d/e/y", "d/e/f/g/z", "new", "new/deep/file", "node_modules/m", "d/node_modules", "d/node_modules/q", "d/.git", "sp ace/é"];

type TreeOp = Op | { op: "mkdir"; path: string };

const treeOp: fc.Arbitrary<TreeOp> = fc.oneof(
  { arbitrary: workdirOp(PATHS), weight: 5 },
  { arbitrary: fc.record({ op: fc.constant("mkdir" as const), path: fc.constantFrom(...PATHS) }), weight: 1 },
);

function apply(root: string, ops: TreeOp[]): void {
  for (const o of ops) {
    if (o.op !== "mkdir") applyOps(root, [o]);
    else
      try {
        mkdirSync(join(root, o.path), { recursive: true });
      } catch {
        // a file on the way
      }
  }
}

/** The watched snapshot now, checked against a listing of the whole tree and its diff against a plain one. */
function look(root: string, w: TreeWatch, before: Record<string, string> | undefined): { files: Record<string, string>; look: SnapshotLook } {
  const r = watchedSnapshot(nodeHost, root, w, { skip: SKIP });
  const listed = snapshotFiles(nodeHost, root, { skip: SKIP });
  expect(r.files).toEqual(listed);
  if (before) expect(diffSnapshots(before, r.files)).toEqual(diffSnapshots({ ...before }, { ...listed }));
  return r;
}

describe.skipIf(skipped(process.platform !== "linux" || "Deno" in globalThis, "the tree watch runs on Node on Linux only"))("the snapshot of a watched tree", () => {
  it("reads again only what changed, and says so", async () => {
    const d = temp.make();
    mkdirSync(join(d, "d", "e"), { recursive: true });
    writeFileSync(join(d, "d", "e", "y"), "1");
    writeFileSync(join(d, "top"), "1");
    const w = TreeWatch.start(nodeHost, d, SKIP)!;
    try {
      await w.settle();
      const first = look(d, w, undefined);
      expect(first.look).toBe("listed");
      await w.settle();
      const same = look(d, w, first.files);
      expect(same.look).toBe("reused");
      expect(same.files).toBe(first.files);
      writeFileSync(join(d, "d", "e", "y"), "2");
      await w.settle();
      const edited = look(d, w, first.files);
      expect(edited.look).toBe("updated");
      expect(diffSnapshots(first.files, edited.files)).toEqual(["d/e/y"]);
      // a folder made with files in it, one moved, one removed
      mkdirSync(join(d, "n", "m"), { recursive: true });
      writeFileSync(join(d, "n", "m", "f"), "1");
      await w.settle();
      const made = look(d, w, edited.files);
      expect(made.look).toBe("updated");
      expect(diffSnapshots(edited.files, made.files)).toEqual(["n/m/f"]);
      renameSync(join(d, "n"), join(d, "d", "moved"));
      await w.settle();
      const moved = look(d, w, made.files);
      expect(moved.look).toBe("updated");
      expect(diffSnapshots(made.files, moved.files)).toEqual(["d/moved/m/f", "n/m/f"]);
      rmSync(join(d, "d"), { recursive: true });
      await w.settle();
      const removed = look(d, w, moved.files);
      expect(removed.look).toBe("updated");
      expect(Object.keys(removed.files)).toEqual(["top"]);
      // what the snapshot skips stays out of it; a file of such a name is in
      mkdirSync(join(d, "node_modules", "p"), { recursive: true });
      writeFileSync(join(d, "node_modules", "p", "i.js"), "1");
      writeFileSync(join(d, ".git"), "gitdir: elsewhere\n");
      await w.settle();
      expect(Object.keys(look(d, w, removed.files).files).sort()).toEqual([".git", "top"]);
    } finally {
      w.close();
    }
  });

  it("is sound: after any operations, the snapshot brought up to date is the tree's listing", { timeout: 180_000 }, async () => {
    const looks: Record<SnapshotLook, number> = { reused: 0, updated: 0, listed: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(treeOp, { maxLength: 6 }), fc.array(treeOp, { maxLength: 4 }), fc.array(fc.array(treeOp, { maxLength: 5 }), { minLength: 1, maxLength: 3 }), async (before, between, rounds) => {
        const d = temp.make();
        apply(d, before);
        const w = TreeWatch.start(nodeHost, d, SKIP)!;
        try {
          apply(d, between); // after the watch started: folders made among them are watched as they come
          await w.settle();
          let last = look(d, w, undefined).files;
          for (const ops of rounds) {
            apply(d, ops);
            await w.settle();
            const r = look(d, w, last);
            looks[r.look]++;
            last = r.files;
          }
        } finally {
          w.close();
        }
      }),
      { numRuns: 300 },
    );
    // the property is about updates: most looks must have been
    expect(looks.updated).toBeGreaterThan(looks.listed);
  });
});
