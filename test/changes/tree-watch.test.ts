import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { TreeWatch } from "../../src/changes/tree-watch.ts";
import { applyOps, tempDirs, workdirOp } from "./workdir-ops.ts";
import { skipped } from "../skip-reason.ts";

const temp = tempDirs("phaseloop-tree-watch-");
const PATHS = ["a", "b.txt", ".dot", "d", "d/x", "d/e", "d/e/y", "d/e/f/g/z", "new", "new/deep/file", "ig.log", "sp ace/é"];

/** Everything of the tree as text (phaseloop's own folder left out), to tell whether it changed. */
function contents(root: string): string {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (rel === "" && name === ".phaseloop") continue;
      const full = join(dir, name);
      const st = lstatSync(full);
      const r = `${rel}${name}`;
      if (st.isDirectory()) {
        out.push(`${r}/`);
        walk(full, `${r}/`);
      } else if (st.isSymbolicLink()) out.push(`${r} -> ${readlinkSync(full)}`);
      else out.push(`${r} ${st.mode & 0o777} ${readFileSync(full, "utf8")}`);
    }
  };
  walk(root, "");
  return out.join("\n");
}

describe.skipIf(skipped(process.platform !== "linux" || "Deno" in globalThis, "the tree watch runs on Node on Linux only"))("the tree watch", () => {
  it("reuses an answer only after a settle, and never once anything in the tree changed", async () => {
    const d = temp.make();
    mkdirSync(join(d, "d", "e"), { recursive: true });
    writeFileSync(join(d, "d", "e", "y"), "1");
    const w = TreeWatch.start(nodeHost, d)!;
    expect(w).toBeDefined();
    try {
      w.remember("idx", "q", ["x"], w.mark());
      expect(w.answerFor("idx", "q")).toBeUndefined(); // no settle since
      await w.settle();
      expect(w.answerFor("idx", "q")).toEqual(["x"]);
      expect(w.answerFor("idx", "other index stat")).toBeUndefined();
      writeFileSync(join(d, "d", "e", "y"), "2");
      await w.settle();
      expect(w.answerFor("idx", "q")).toBeUndefined();
      // a folder made after the watch started is watched from then on
      mkdirSync(join(d, "n", "m"), { recursive: true });
      await w.settle();
      w.remember("idx", "q", ["n/"], w.mark());
      await w.settle();
      expect(w.answerFor("idx", "q")).toEqual(["n/"]);
      writeFileSync(join(d, "n", "m", "f"), "1");
      await w.settle();
      expect(w.answerFor("idx", "q")).toBeUndefined();
      // a folder removed and made again is a new folder: what is written in it is seen
      rmSync(join(d, "d"), { recursive: true });
      mkdirSync(join(d, "d", "e"), { recursive: true });
      await w.settle();
      w.remember("idx", "q", ["again"], w.mark());
      await w.settle();
      expect(w.answerFor("idx", "q")).toEqual(["again"]);
      writeFileSync(join(d, "d", "e", "y"), "3");
      await w.settle();
      expect(w.answerFor("idx", "q")).toBeUndefined();
    } finally {
      w.close();
    }
  });

  it("is sound: after any operations that change the tree, the answer is not reused", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(workdirOp(PATHS, true), { maxLength: 5 }), fc.array(workdirOp(PATHS, true), { maxLength: 4 }), fc.array(workdirOp(PATHS, true), { maxLength: 4 }), async (before, between, during) => {
        const d = temp.make();
        applyOps(d, before);
        const w = TreeWatch.start(nodeHost, d)!;
        try {
          applyOps(d, between); // made after the watch started: new folders among them
          await w.settle();
          const was = contents(d);
          w.remember("idx", "q", ["answer"], w.mark());
          await w.settle();
          expect(w.answerFor("idx", "q")).toEqual(["answer"]);
          applyOps(d, during);
          await w.settle();
          if (contents(d) !== was) expect(w.answerFor("idx", "q")).toBeUndefined();
        } finally {
          w.close();
        }
      }),
      { numRuns: 150 },
    );
  });

  it("gives nothing where it cannot watch", () => {
    expect(TreeWatch.start(nodeHost, join(temp.make(), "missing"))).toBeUndefined();
  });
});
