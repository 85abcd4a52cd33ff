import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, events, git, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

/** A committed repository (or a plain folder) of more files than the stat watch takes (2,000), so the tree watch answers. */
function largeRepo(kind: "git" | "plain" = "git"): string {
  const dir = tempDir("phaseloop-large-tree-");
  for (let i = 0; i < 2200; i++) {
    const folder = join(dir, "src", `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, `f${i}.txt`), `file ${i}\n`);
  }
  writeFileSync(join(dir, ".gitignore"), "*.log\n");
  if (kind === "plain") return dir;
  git(dir, "init", "-q");
  git(dir, "add", "-A");
  git(dir, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "files");
  return dir;
}

describe("measuring a large tree, where looks that find nothing new need no git", () => {
  it.each(["git", "plain"] as const)("every phase's changes are the iteration's, whatever each phase did (%s)", { timeout: 120_000 }, (kind) => {
    const dir = largeRepo(kind);
    write(dir, {
      "p.yaml": `phaseloop: 1
name: large
phases:
  make: { run: "mkdir -p new/deep && echo 1 > new/deep/f" }
  idle1: { run: "true" }
  edit: { run: "echo x >> src/d0/f0.txt" }
  idle2: { run: "true" }
  mode: { run: "chmod +x src/d1/f100.txt" }
  ignored: { run: "echo log > new/deep/x.log" }
  remove: { run: "rm new/deep/f" }
  later: { run: "echo 2 > new/deep/g" }
  idle3:
    run: "true"
    next: [ { stop: complete } ]
stop: { max_iterations: 1, no_progress: 5 }
`,
    });
    if (kind === "git") {
      git(dir, "add", "p.yaml");
      git(dir, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "pipeline");
    }
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const changes = Object.fromEntries(events(dir).filter((e) => e.type === "phase.finished").map((e) => [e.phase, e.changes]));
    // outside git nothing is ignored: the .log file counts
    const log = kind === "plain" ? ["new/deep/x.log"] : [];
    const withLog = (paths: string[]) => [...paths, ...log].sort();
    expect(changes).toEqual({
      make: ["new/deep/f"],
      idle1: ["new/deep/f"],
      edit: ["new/deep/f", "src/d0/f0.txt"],
      idle2: ["new/deep/f", "src/d0/f0.txt"],
      mode: ["new/deep/f", "src/d0/f0.txt", "src/d1/f100.txt"],
      ignored: withLog(["new/deep/f", "src/d0/f0.txt", "src/d1/f100.txt"]),
      remove: withLog(["src/d0/f0.txt", "src/d1/f100.txt"]),
      later: withLog(["new/deep/g", "src/d0/f0.txt", "src/d1/f100.txt"]),
      idle3: withLog(["new/deep/g", "src/d0/f0.txt", "src/d1/f100.txt"]),
    });
  });

  it("an iteration that changed nothing is seen as such, and one that did is not", { timeout: 120_000 }, () => {
    const dir = largeRepo();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: large
phases:
  step: { run: "if [ $PHASELOOP_ITERATION -le 2 ]; then echo $PHASELOOP_ITERATION > src/d3/f300.txt; fi" }
  verify:
    run: "true"
    next: [ { if: "iteration >= 100", stop: complete } ]
stop: { max_iterations: 6, no_progress: 2 }
`,
    });
    git(dir, "add", "p.yaml");
    git(dir, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "pipeline");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(3);
    const its = events(dir).filter((e) => e.type === "iteration.finished").map((e) => e.changes);
    expect(its, r.stdout + r.stderr).toEqual([["src/d3/f300.txt"], ["src/d3/f300.txt"], [], []]);
  });
});
