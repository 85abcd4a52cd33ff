import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, readFileSync, existsSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { changesSince, revertPaths, takeBaseline } from "../../src/changes/measure-changes.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), "phaseloop-changes-"));
  dirs.push(d);
  return d;
};
const git = (cwd: string, ...args: string[]) => spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

describe("reverting outside git", () => {
  it("removes files created since the baseline and reports the changed ones it cannot restore", () => {
    const d = temp();
    writeFileSync(join(d, "kept.txt"), "original");
    const base = takeBaseline(nodeHost, d);
    writeFileSync(join(d, "kept.txt"), "changed");
    mkdirSync(join(d, "new"));
    writeFileSync(join(d, "new", "file.txt"), "created");
    expect(revertPaths(nodeHost, d, base, ["kept.txt", "new/file.txt"])).toEqual(["kept.txt"]);
    expect(existsSync(join(d, "new", "file.txt"))).toBe(false);
    expect(readFileSync(join(d, "kept.txt"), "utf8")).toBe("changed");
  });
});

describe("measured changes outside git: the stat cache", () => {
  it("sees a same-size rewrite made at once after the baseline (racily clean)", () => {
    const d = temp();
    writeFileSync(join(d, "a.txt"), "one");
    const base = takeBaseline(nodeHost, d);
    writeFileSync(join(d, "a.txt"), "two");
    expect(changesSince(nodeHost, d, base)).toEqual(["a.txt"]);
  });

  it("sees a rewrite of an old file whose modification time was set back", () => {
    const d = temp();
    const file = join(d, "old.txt");
    writeFileSync(file, "before");
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(file, old, old);
    // ctime moves with utimes too: wait until the file counts as settled
    const settledAt = statSync(file).ctimeMs + 1100;
    while (Date.now() < settledAt) spawnSync("sleep", ["0.1"]);
    const base = takeBaseline(nodeHost, d);
    expect(changesSince(nodeHost, d, base)).toEqual([]); // served from the cache
    writeFileSync(file, "after!");
    utimesSync(file, old, old);
    expect(statSync(file).size).toBe("before".length);
    expect(changesSince(nodeHost, d, base)).toEqual(["old.txt"]);
  });
});

for (const kind of ["git", "plain"] as const) {
  describe(`measured changes (${kind})`, () => {
    const setup = () => {
      const d = temp();
      if (kind === "git") {
        git(d, "init", "-q");
        writeFileSync(join(d, ".gitignore"), "ignored.txt\n");
      }
      writeFileSync(join(d, "a.txt"), "a");
      writeFileSync(join(d, "b.txt"), "b");
      if (kind === "git") {
        git(d, "add", "-A");
        git(d, "commit", "-qm", "init");
      }
      return d;
    };
    it("sees created, modified, deleted and untracked files", () => {
      const d = setup();
      const base = takeBaseline(nodeHost, d);
      expect(base.kind).toBe(kind === "git" ? "git" : "snapshot");
      writeFileSync(join(d, "a.txt"), "changed");
      rmSync(join(d, "b.txt"));
      mkdirSync(join(d, "src"));
      writeFileSync(join(d, "src", "new.ts"), "x");
      mkdirSync(join(d, ".phaseloop"), { recursive: true });
      writeFileSync(join(d, ".phaseloop", "state.json"), "{}");
      expect(changesSince(nodeHost, d, base)).toEqual(["a.txt", "b.txt", "src/new.ts"]);
    });
    it("reports nothing for an iteration that changed nothing", () => {
      const d = setup();
      writeFileSync(join(d, "dirty.txt"), "left from before");
      const base = takeBaseline(nodeHost, d);
      expect(changesSince(nodeHost, d, base)).toEqual([]);
    });
    it("does not count earlier iterations' changes again (the cumulative-diff defect)", () => {
      const d = setup();
      const first = takeBaseline(nodeHost, d);
      writeFileSync(join(d, "a.txt"), "iteration 1");
      expect(changesSince(nodeHost, d, first)).toEqual(["a.txt"]);
      const second = takeBaseline(nodeHost, d);
      expect(changesSince(nodeHost, d, second)).toEqual([]);
    });
    if (kind === "git") {
      it("honours .gitignore and leaves the user's index alone", () => {
        const d = setup();
        writeFileSync(join(d, "a.txt"), "staged");
        git(d, "add", "a.txt");
        const before = git(d, "diff", "--cached", "--name-only").stdout;
        const base = takeBaseline(nodeHost, d);
        writeFileSync(join(d, "ignored.txt"), "x");
        expect(changesSince(nodeHost, d, base)).toEqual([]);
        expect(git(d, "diff", "--cached", "--name-only").stdout).toBe(before);
      });
      it("reverts changed and created paths to the baseline", () => {
        const d = setup();
        const base = takeBaseline(nodeHost, d);
        writeFileSync(join(d, "a.txt"), "bad");
        writeFileSync(join(d, "c.txt"), "new");
        expect(revertPaths(nodeHost, d, base, ["a.txt", "c.txt"])).toEqual([]);
        expect(readFileSync(join(d, "a.txt"), "utf8")).toBe("a");
        expect(existsSync(join(d, "c.txt"))).toBe(false);
      });
      it("works from a subdirectory of a repository", () => {
        const d = setup();
        mkdirSync(join(d, "pkg"));
        const base = takeBaseline(nodeHost, join(d, "pkg"));
        writeFileSync(join(d, "pkg", "x.txt"), "x");
        writeFileSync(join(d, "outside.txt"), "x");
        expect(changesSince(nodeHost, join(d, "pkg"), base)).toEqual(["x.txt"]);
      });
    }
  });
}
