/**
 * Change measurement on the memory host: the same modules the runner uses,
 * over in-memory files, a scripted `find` and a fake clock, with no process
 * started and nothing written to disk.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ChangeTracker } from "../../src/changes/change-tracker.ts";
import { diffSnapshots, pathState, snapshotFiles } from "../../src/changes/file-snapshot.ts";
import { gitInternalsChanged, restoreGitInternals, snapshotGitInternals } from "../../src/changes/git-internals.ts";
import { keepListing, readKeptListing, type ListedEntry } from "../../src/changes/kept-listing.ts";
import { changesSince, takeBaseline } from "../../src/changes/measure-changes.ts";
import { withoutOwnOutput } from "../../src/changes/own-output.ts";
import { updateSnapshot } from "../../src/changes/snapshot-update.ts";
import { watchAnswer, watchedAnswer } from "../../src/changes/stat-watch.ts";
import { statWalk } from "../../src/changes/stat-walk.ts";
import type { FolderEvents } from "../../src/changes/tree-watch.ts";
import { scopeChangesSince, takeScopeBaseline } from "../../src/changes/write-scope-baseline.ts";
import { HostCrash, MemoryHost } from "../../src/host/memory-host.ts";

const W = "/work/w";
const SKIP = new Set([".git", "node_modules", ".phaseloop"]);
const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");

function workdir(files: Record<string, string> = {}): MemoryHost {
  return new MemoryHost({ files: { [`${W}/src/a.ts`]: "a\n", [`${W}/README.md`]: "hi\n", ...files } });
}

describe("change measurement on the memory host", () => {
  it("snapshots files by content hash, a link by its target, and leaves skipped folders out", () => {
    const host = workdir({ [`${W}/node_modules/x/index.js`]: "x", [`${W}/.phaseloop/state.json`]: "{}" });
    host.symlink("src/a.ts", `${W}/link`);
    const files = snapshotFiles(host, W, { skip: SKIP });
    expect(files).toEqual({ "README.md": sha1("hi\n"), "src/a.ts": sha1("a\n"), link: "link:src/a.ts" });
    expect(pathState(host, `${W}/src/a.ts`)).toBe(sha1("a\n"));
    expect(pathState(host, `${W}/nothing`)).toBe("-");
    expect(pathState(host, `${W}/src`)).toMatch(/^dir:40755:/);
  });

  it("records by stat where asked (statOnly), and an executable bit is a change", () => {
    const host = workdir({ [`${W}/node_modules/x/index.js`]: "x" });
    const before = snapshotFiles(host, W, { skip: new Set([".phaseloop"]), statOnly: new Set(["node_modules"]) });
    expect(before["node_modules/x/index.js"]).toMatch(/^100644:1:/);
    host.files.chmod(`${W}/src/a.ts`, 0o755);
    const after = snapshotFiles(host, W, { skip: new Set([".phaseloop"]), statOnly: new Set(["node_modules"]) });
    expect(after["src/a.ts"]).toBe(`x${sha1("a\n")}`);
    expect(diffSnapshots(before, after)).toEqual(["src/a.ts"]);
  });

  it("outside git, names the files added, changed and removed since the baseline, and only those", () => {
    const host = workdir();
    const base = takeBaseline(host, W);
    expect(base.kind).toBe("snapshot");
    expect(changesSince(host, W, base)).toEqual([]);
    host.clock.advance(2000);
    host.files.writeText(`${W}/src/a.ts`, "A\n");
    host.files.mkdir(`${W}/new`);
    host.files.writeText(`${W}/new/b.ts`, "b\n");
    host.files.remove(`${W}/README.md`);
    host.files.mkdir(`${W}/.phaseloop`);
    host.files.writeText(`${W}/.phaseloop/x`, "phaseloop's own");
    expect(changesSince(host, W, base)).toEqual(["README.md", "new/b.ts", "src/a.ts"]);
  });

  it("a file rewritten with the same bytes is no change, whatever its stat", () => {
    const host = workdir();
    const base = takeBaseline(host, W);
    host.clock.advance(5000);
    host.files.writeText(`${W}/src/a.ts`, "a\n");
    expect(changesSince(host, W, base)).toEqual([]);
  });

  it("the tracker measures each iteration from its own baseline, reusing the last look", () => {
    const host = workdir();
    const tracker = new ChangeTracker(host, W);
    tracker.beginIteration();
    tracker.startPhase(false);
    host.files.writeText(`${W}/src/a.ts`, "1\n");
    expect(tracker.endPhase().changes).toEqual(["src/a.ts"]);
    tracker.beginIteration();
    tracker.startPhase(false);
    host.files.writeText(`${W}/src/b.ts`, "2\n");
    expect(tracker.endPhase().changes).toEqual(["src/b.ts"]);
    tracker.startPhase(false);
    expect(tracker.endPhase().changes).toEqual(["src/b.ts"]);
  });

  it("a write scope outside git sees every file, and a repository the agent made is git's own", () => {
    const host = workdir({ [`${W}/node_modules/dep/x.js`]: "x" });
    const base = takeScopeBaseline(host, W);
    host.clock.advance(10);
    host.files.writeText(`${W}/node_modules/dep/x.js`, "y");
    host.files.mkdir(`${W}/.git/hooks`);
    host.files.writeText(`${W}/.git/hooks/pre-commit`, "#!/bin/sh\n");
    host.files.writeText(`${W}/out.txt`, "o");
    expect(scopeChangesSince(host, W, base)).toEqual({ paths: ["node_modules/dep/x.js", "out.txt"], internals: [".git/hooks/pre-commit"] });
  });

  it("the repository's own files are kept byte for byte and put back, a link as a link and a hook with its mode", () => {
    const host = new MemoryHost({ files: { [`${W}/.git/config`]: "[core]\n", [`${W}/.git/HEAD`]: "ref: refs/heads/main\n", [`${W}/.git/objects/ab/cd`]: "blob" } });
    host.files.mkdir(`${W}/.git/hooks`);
    host.files.writeText(`${W}/.git/hooks/post-merge`, "#!/bin/sh\ntrue\n", { mode: 0o755 });
    host.symlink("../config", `${W}/.git/hooks/cfg`);
    const dirs = [`${W}/.git`, `${W}/.git`];
    const before = snapshotGitInternals(host.files, dirs);
    expect([...before.keys()].sort()).toEqual([`${W}/.git/HEAD`, `${W}/.git/config`, `${W}/.git/hooks/cfg`, `${W}/.git/hooks/post-merge`]);
    host.clock.advance(10);
    host.files.writeText(`${W}/.git/config`, "[core]\n\thooksPath = evil\n");
    host.files.writeText(`${W}/.git/hooks/pre-commit`, "#!/bin/sh\ntouch PWNED\n");
    host.files.remove(`${W}/.git/hooks/post-merge`);
    host.files.remove(`${W}/.git/hooks/cfg`);
    host.files.writeText(`${W}/.git/objects/ab/ef`, "not looked at");
    const changed = gitInternalsChanged(host.files, before, dirs);
    expect(changed).toEqual([`${W}/.git/config`, `${W}/.git/hooks/cfg`, `${W}/.git/hooks/post-merge`, `${W}/.git/hooks/pre-commit`]);
    expect(restoreGitInternals(host.files, before, changed)).toEqual([]);
    expect(host.files.readText(`${W}/.git/config`)).toBe("[core]\n");
    expect(host.files.exists(`${W}/.git/hooks/pre-commit`)).toBe(false);
    expect((host.files.stat(`${W}/.git/hooks/post-merge`)?.mode ?? 0) & 0o7777).toBe(0o755);
    expect(host.files.readlink(`${W}/.git/hooks/cfg`)).toBe("../config");
    // put back byte for byte and mode for mode: nothing differs from the snapshot any more
    expect(gitInternalsChanged(host.files, before, dirs)).toEqual([]);
  });

  it("the kept listing reads back what was kept, and nothing from a file not one", () => {
    const host = new MemoryHost({ files: { "/work/other": "something else\0a\0b\0" } });
    const entries = new Map<string, ListedEntry>([
      ["a.txt", { stat: "f 644 1 1.5 1.5 7", path: "a.txt", value: sha1("a"), seen: 3 }],
      ["d/l", { stat: "l 777 5 1.5 1.5 8", path: "d/l", value: "link:../a.txt", seen: 3 }],
    ]);
    keepListing(host, `${W}/.phaseloop/measure/listing`, entries);
    const back = readKeptListing(host.files, `${W}/.phaseloop/measure/listing`);
    expect([...back.values()]).toEqual([...entries.values()].map((e) => ({ ...e, seen: 0 })));
    expect(readKeptListing(host.files, "/work/other").size).toBe(0);
    expect(readKeptListing(host.files, "/work/missing").size).toBe(0);
    expect(Object.keys(host.snapshot()).filter((p) => p.includes(".tmp"))).toEqual([]);
  });

  it("a crash at any write of the kept listing leaves the one before whole", () => {
    const file = `${W}/.phaseloop/measure/listing`;
    const old = new Map<string, ListedEntry>([["a", { stat: "s1", path: "a", value: "v1", seen: 0 }]]);
    const next = new Map<string, ListedEntry>([["a", { stat: "s2", path: "a", value: "v2", seen: 0 }], ["b", { stat: "s3", path: "b", value: "v3", seen: 0 }]]);
    for (let crashAt = 1; ; crashAt++) {
      const setup = new MemoryHost();
      keepListing(setup, file, old);
      const host = setup.restart({ crashAt });
      try {
        keepListing(host, file, next); // a listing that cannot be kept is no failure of the run
      } catch (error) {
        expect(error).toBeInstanceOf(HostCrash); // the process died there
      }
      const after = readKeptListing(host.restart().files, file);
      expect([...after.values()]).toEqual([...(host.crashed ? old : next).values()]);
      if (!host.crashed) break;
      expect(host.writes).toBe(crashAt);
    }
  });

  it("a listing by find comes through the host's processes; where find cannot, the walk is done here, and find is not asked again", () => {
    const out = "f 644 2 1700000000.25 1700000001 11\0a.txt\0\0l 777 5 1700000000 1700000000 12\0sub/l\0a.txt\0d 755 0 1 1 13\0sub\0\0";
    const calls: string[][] = [];
    const host = new MemoryHost({ runSync: (argv) => (calls.push([...argv]), { status: 0, stdout: out }) });
    const seen: [string, string, string | undefined][] = [];
    expect(statWalk(host.processes, W, new Set([".git"]), (stat, path, link) => seen.push([stat, path, link]))).toBe(true);
    expect(seen).toEqual([["f 644 2 1700000000.25 1700000001 11", "a.txt", undefined], ["l 777 5 1700000000 1700000000 12", "sub/l", "a.txt"]]);
    expect(calls[0]!.slice(1, 4)).toEqual([".", "-mindepth", "1"]);

    const without = workdir();
    expect(statWalk(without.processes, W, SKIP, () => {})).toBe(false);
    expect(Object.keys(snapshotFiles(without, W, { skip: SKIP })).sort()).toEqual(["README.md", "src/a.ts"]);
  });

  it("the stat watch answers as git did while nothing changed, and sends a changed file back to git", () => {
    const host = workdir({ [`${W}/.phaseloop/measure/index-x`]: "index" });
    const index = `${W}/.phaseloop/measure/index-x`;
    // a folder changed within the file system's granularity (whole seconds here) could gain an entry unseen
    host.clock.advance(3000);
    watchAnswer(host, W, index, ["src/a.ts"], ["README.md", "src/a.ts"]);
    expect(watchedAnswer(host, W, index)).toEqual(["src/a.ts"]);
    host.clock.advance(1000);
    host.files.writeText(`${W}/README.md`, "changed\n");
    expect(watchedAnswer(host, W, index)).toBeUndefined();
  });

  it("a snapshot brought up to date from the folders a watch named is the tree's listing", () => {
    const host = workdir({ [`${W}/old/x.ts`]: "x", [`${W}/old/deep/y.ts`]: "y" });
    const before = snapshotFiles(host, W, { skip: SKIP });
    host.clock.advance(10);
    host.files.writeText(`${W}/README.md`, "changed\n");
    host.files.writeText(`${W}/src/b.ts`, "b\n");
    host.files.remove(`${W}/src/a.ts`);
    host.files.remove(`${W}/old`, { recursive: true });
    host.files.mkdir(`${W}/lib/inner`);
    host.files.writeText(`${W}/lib/inner/z.ts`, "z");
    const named = (names: string[], folders: string[] = []): FolderEvents => ({ generation: 1, names: new Map(names.map((n) => [n, 1])), folders: new Map(folders.map((n) => [n, 1])) });
    const events = new Map([
      [W, named(["README.md", "old", "lib"], ["old"])],
      [`${W}/src`, named(["a.ts", "b.ts"])],
    ]);
    const updated = updateSnapshot(host, W, before, events, 0, SKIP);
    expect(updated).toEqual(snapshotFiles(host, W, { skip: SKIP }));
    expect(diffSnapshots(before, updated!)).toEqual(["README.md", "lib/inner/z.ts", "old/deep/y.ts", "old/x.ts", "src/a.ts", "src/b.ts"]);
  });

  it("phaseloop's own output leads nowhere in memory: every path stays", () => {
    const host = workdir();
    expect(withoutOwnOutput(host, W, ["src/a.ts", "run.log"])).toEqual(["src/a.ts", "run.log"]);
  });
});
