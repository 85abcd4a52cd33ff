import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { WATCH_LIMIT, watchAnswer, watchedAnswer } from "../../src/changes/stat-watch.ts";

const root = mkdtempSync(join(tmpdir(), "phaseloop-watch-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A workdir with a few files and an index file standing for phaseloop's own. */
function tree() {
  const dir = join(root, `w${n++}`);
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "a.txt"), "0");
  writeFileSync(join(dir, "src", "b.txt"), "b");
  const index = join(root, `index-${n}`);
  writeFileSync(index, "index");
  // directories changed this recently are not watched (an entry could come in unseen)
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120);
  return { dir, index, files: ["a.txt", "src/b.txt"] };
}

describe("the stat watch", () => {
  it("answers as git did while nothing changed", () => {
    const t = tree();
    watchAnswer(nodeHost, t.dir, t.index, ["a.txt"], t.files);
    expect(watchedAnswer(nodeHost, t.dir, t.index)).toEqual(["a.txt"]);
    expect(watchedAnswer(nodeHost, t.dir, t.index)).toEqual(["a.txt"]);
  });

  it("sends a file rewritten with new content of the same size back to git, however soon after", () => {
    // written within one tick of the file system's clock, the stat alone would not show it
    for (let i = 0; i < 20; i++) {
      const t = tree();
      writeFileSync(join(t.dir, "a.txt"), "1");
      watchAnswer(nodeHost, t.dir, t.index, ["a.txt"], t.files);
      writeFileSync(join(t.dir, "a.txt"), "0");
      expect(watchedAnswer(nodeHost, t.dir, t.index)).toBeUndefined();
    }
  });

  it("sends any new entry, deletion or rewritten index back to git", () => {
    const added = tree();
    watchAnswer(nodeHost, added.dir, added.index, [], added.files);
    writeFileSync(join(added.dir, "src", "new.txt"), "n");
    expect(watchedAnswer(nodeHost, added.dir, added.index)).toBeUndefined();

    const deleted = tree();
    watchAnswer(nodeHost, deleted.dir, deleted.index, [], deleted.files);
    rmSync(join(deleted.dir, "src", "b.txt"));
    expect(watchedAnswer(nodeHost, deleted.dir, deleted.index)).toBeUndefined();

    const nested = tree();
    watchAnswer(nodeHost, nested.dir, nested.index, [], nested.files);
    mkdirSync(join(nested.dir, "src", "deeper"));
    expect(watchedAnswer(nodeHost, nested.dir, nested.index)).toBeUndefined();

    const reindexed = tree();
    watchAnswer(nodeHost, reindexed.dir, reindexed.index, [], reindexed.files);
    writeFileSync(reindexed.index, "another index");
    expect(watchedAnswer(nodeHost, reindexed.dir, reindexed.index)).toBeUndefined();
  });

  it("answers only for the index and workdir it watched, and not for trees too large to stat here", () => {
    const t = tree();
    watchAnswer(nodeHost, t.dir, t.index, [], t.files);
    expect(watchedAnswer(nodeHost, t.dir, join(root, "other-index"))).toBeUndefined();
    expect(watchedAnswer(nodeHost, join(root, "elsewhere"), t.index)).toBeUndefined();
    const big = tree();
    watchAnswer(nodeHost, big.dir, big.index, [], Array.from({ length: WATCH_LIMIT + 1 }, (_, i) => `f${i}`));
    expect(watchedAnswer(nodeHost, big.dir, big.index)).toBeUndefined();
  });
});
