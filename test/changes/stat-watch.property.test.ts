import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { findRepo, privateEnv, worktreeChanges, writeSlotIndex, type GitRepo } from "../../src/changes/private-git.ts";
import { watchedAnswer } from "../../src/changes/stat-watch.ts";
import { applyOps, git, tempDirs, workdirOp, type Op } from "./workdir-ops.ts";

const temp = tempDirs("phaseloop-watch-prop-");

// nesting, dotfiles, ignored files and folders, an empty committed file
const PATHS = ["a", "b.txt", ".dot", "d/x", "d/e/y", "ig.log", "build/out", "sp ace/é"];

/** Operations beyond the shared ones: a folder, a nested ignore file, an attributes file, a file touched or rewritten as it is. */
type Extra =
  | { op: "mkdir"; path: string }
  | { op: "nested-ignore"; rules: string }
  | { op: "attributes"; rules: string }
  | { op: "touch"; path: string };
type Step = { ops: (Op | Extra)[]; wait: number; rebase: boolean };

const path = fc.constantFrom(...PATHS);
const anyOp: fc.Arbitrary<Op | Extra> = fc.oneof(
  { arbitrary: workdirOp(PATHS, true), weight: 8 },
  // rewrites in place, which move no folder: the looks the watch judges itself
  { arbitrary: fc.record({ op: fc.constant("write" as const), path, content: fc.constantFrom("", "1", "2", "22", "hello\n") }), weight: 8 },
  { arbitrary: fc.record({ op: fc.constant("chmod" as const), path, exec: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("mkdir" as const), path: fc.constantFrom("d/new", "e", "build/deep") }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("nested-ignore" as const), rules: fc.constantFrom("x\n", "*\n", "") }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("attributes" as const), rules: fc.constantFrom("* -text\n", "b.txt eol=crlf\n") }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("touch" as const), path }), weight: 2 },
);
// most looks right after the writes (racy), some after the file system's clock has moved on
const step: fc.Arbitrary<Step> = fc.record({ ops: fc.array(anyOp, { maxLength: 3 }), wait: fc.constantFrom(0, 3, 70, 70), rebase: fc.boolean().map((b) => b && Math.random() < 0.2) });

function apply(root: string, ops: (Op | Extra)[]): void {
  for (const o of ops) {
    try {
      if (o.op === "mkdir") mkdirSync(join(root, o.path), { recursive: true });
      else if (o.op === "nested-ignore") {
        mkdirSync(join(root, "d"), { recursive: true });
        writeFileSync(join(root, "d", ".gitignore"), o.rules);
      } else if (o.op === "attributes") writeFileSync(join(root, ".gitattributes"), o.rules);
      else if (o.op === "touch") utimesSync(join(root, o.path), new Date(), new Date());
      else applyOps(root, [o]);
    } catch {
      // not applicable here
    }
  }
}

const sleep = (ms: number) => ms > 0 && Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * `git status` against a copy of the index (git may rewrite the index it reads): the paths
 * differing from it. The copy is dated in 1970, so that git trusts no stat of it and compares
 * every file's content, and no untracked cache is used.
 */
function gitAnswer(d: string, repo: GitRepo, index: string): string[] {
  const copy = `${index}.ref`;
  copyFileSync(index, copy);
  utimesSync(copy, 1, 1); // git takes a time of 0 for none
  const r = spawnSync("git", ["-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "status", "--porcelain=v2", "-z", "-uall", "--no-renames"], { cwd: d, env: { ...process.env, ...privateEnv(nodeHost, d, repo, copy) }, encoding: "utf8" });
  rmSync(copy, { force: true });
  expect(r.status).toBe(0);
  const out: string[] = [];
  const fields = r.stdout.split("\0");
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (f.startsWith("? ")) out.push(f.slice(2));
    else if (f.startsWith("1 ") && f[3] !== ".") out.push(f.split(" ").slice(8).join(" "));
    else if (f.startsWith("u ")) out.push(f.split(" ").slice(10).join(" "));
    else if (f.startsWith("2 ")) {
      if (f[3] !== ".") out.push(f.split(" ").slice(9).join(" "));
      i++;
    }
  }
  return out.filter((p) => !p.startsWith(".phaseloop/")).sort();
}

let derived = 0;

/** Each look answered in-process, when the watch can, is git's answer against the same index. */
function run(committed: Op[], dirty: Op[], steps: Step[]): void {
  const d = temp.make();
  writeFileSync(join(d, ".gitignore"), "*.log\nbuild/\n");
  writeFileSync(join(d, "empty"), "");
  applyOps(d, committed);
  git(d, "init", "-q");
  git(d, "add", "-A");
  git(d, "commit", "-qm", "init");
  applyOps(d, dirty);
  const repo = findRepo(nodeHost, d)!;
  let index = writeSlotIndex(nodeHost, d, repo, "prop")!;
  sleep(60); // folders changed this recently are not watched
  expect(worktreeChanges(nodeHost, d, repo, index)?.changed).toEqual(gitAnswer(d, repo, index));
  for (const s of steps) {
    apply(d, s.ops);
    if (s.rebase) index = writeSlotIndex(nodeHost, d, repo, "prop")!;
    sleep(s.wait);
    const inProcess = watchedAnswer(nodeHost, d, index);
    const truth = gitAnswer(d, repo, index);
    if (inProcess) {
      if (s.ops.length > 0) derived++;
      expect(inProcess, JSON.stringify(s.ops)).toEqual(truth);
    }
    expect(worktreeChanges(nodeHost, d, repo, index)?.changed).toEqual(truth);
  }
}

describe("the stat watch against git", () => {
  it("answers as git status against the same index, however files were written, replaced, renamed or ignored between looks", () => {
    const ops = fc.array(workdirOp(PATHS, true), { maxLength: 4 });
    fc.assert(fc.property(ops, ops, fc.array(step, { minLength: 1, maxLength: 10 }), run), { numRuns: 40 });
    // the property says something only if files changed between looks were judged here
    expect(derived).toBeGreaterThan(0);
  }, 240_000);

  /** A repository with a tracked and an untracked file changed, looked at once by git (and watched). */
  function watchedRepo(prepare: (d: string) => void = () => {}) {
    const d = temp.make();
    writeFileSync(join(d, "t.txt"), "committed");
    git(d, "init", "-q");
    prepare(d);
    git(d, "add", "-A");
    git(d, "commit", "-qm", "init");
    const repo = findRepo(nodeHost, d)!;
    const index = writeSlotIndex(nodeHost, d, repo, "unit")!;
    writeFileSync(join(d, "t.txt"), "changed");
    writeFileSync(join(d, "u.txt"), "1");
    sleep(70);
    expect(worktreeChanges(nodeHost, d, repo, index)?.changed).toEqual(["t.txt", "u.txt"]);
    return { d, repo, index };
  }

  /** `look` with no git to be found: what it answers is the watch's own. */
  function withoutGit<T>(look: () => T): T {
    const path = process.env.PATH;
    try {
      process.env.PATH = "";
      return look();
    } finally {
      process.env.PATH = path;
    }
  }

  it("judges a rewritten untracked file, and a tracked file reverted to the index's content, without git", () => {
    const { d, repo, index } = watchedRepo();
    withoutGit(() => {
      writeFileSync(join(d, "u.txt"), "2");
      writeFileSync(join(d, "t.txt"), "committed");
      expect(worktreeChanges(nodeHost, d, repo, index)?.changed).toEqual(["u.txt"]);
      writeFileSync(join(d, "t.txt"), "again");
      expect(worktreeChanges(nodeHost, d, repo, index)?.changed).toEqual(["t.txt", "u.txt"]);
      chmodSync(join(d, "t.txt"), 0o755);
      writeFileSync(join(d, "t.txt"), "committed");
      expect(worktreeChanges(nodeHost, d, repo, index)?.changed).toEqual(["t.txt", "u.txt"]);
    });
  });

  it("asks git when it may convert content or ignore modes, or when an ignore file changed", () => {
    const converting: ((d: string) => void)[] = [
      (d) => writeFileSync(join(d, ".gitattributes"), "*.txt text\n"),
      (d) => git(d, "config", "core.autocrlf", "input"),
      (d) => git(d, "config", "core.fileMode", "false"),
      (d) => {
        mkdirSync(join(d, ".git", "info"), { recursive: true });
        writeFileSync(join(d, ".git", "info", "attributes"), "* -text\n");
      },
    ];
    for (const prepare of converting) {
      const { d, repo, index } = watchedRepo(prepare);
      writeFileSync(join(d, "t.txt"), "committed");
      expect(withoutGit(() => worktreeChanges(nodeHost, d, repo, index))).toBeUndefined();
    }
    const { d, repo, index } = watchedRepo((d) => writeFileSync(join(d, ".gitignore"), "*.log\n"));
    writeFileSync(join(d, ".gitignore"), "*.txt\n");
    expect(withoutGit(() => worktreeChanges(nodeHost, d, repo, index))).toBeUndefined();
    // in a folder of the repository, the ignore files above it rule it too
    const top = temp.make();
    mkdirSync(join(top, "w"));
    writeFileSync(join(top, "w", "t.txt"), "committed");
    git(top, "init", "-q");
    git(top, "add", "-A");
    git(top, "commit", "-qm", "init");
    const w = join(top, "w");
    const sub = findRepo(nodeHost, w)!;
    const subIndex = writeSlotIndex(nodeHost, w, sub, "unit")!;
    writeFileSync(join(w, "u.txt"), "1");
    sleep(70);
    expect(worktreeChanges(nodeHost, w, sub, subIndex)?.changed).toEqual(["u.txt"]);
    expect(withoutGit(() => worktreeChanges(nodeHost, w, sub, subIndex))?.changed).toEqual(["u.txt"]);
    writeFileSync(join(top, ".gitignore"), "u.txt\n");
    expect(withoutGit(() => worktreeChanges(nodeHost, w, sub, subIndex))).toBeUndefined();
    // a setting made while watched is a changed configuration file
    const late = watchedRepo();
    git(late.d, "config", "core.autocrlf", "true");
    writeFileSync(join(late.d, "u.txt"), "2");
    expect(withoutGit(() => worktreeChanges(nodeHost, late.d, late.repo, late.index))).toBeUndefined();
  });
});
