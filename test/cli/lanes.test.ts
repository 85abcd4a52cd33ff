import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, events, git, runDir, tempDir, write } from "./cli-helpers.ts";
import { expectTidy, gitOut, laneRepo, LANES_PIPELINE } from "./lanes-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

describe("a task queue in parallel lanes", () => {
  it("merges every independent task into the workdir's branch and leaves nothing behind", () => {
    const dir = laneRepo({ a: {}, b: {}, c: {}, d: {}, e: {} });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    for (const id of ["a", "b", "c", "d", "e"]) expect(readFileSync(join(dir, `out-${id}.txt`), "utf8")).toBe(`${id}\n`);
    expectTidy(dir);
    // one commit per task naming it, merged; the lanes' branches are gone once merged
    expect(gitOut(dir, "branch", "--format=%(refname:short)")).toBe("main");
    const subjects = gitOut(dir, "log", "--format=%s|%an|%cn", "main").split("\n");
    for (const id of ["a", "b", "c", "d", "e"]) {
      expect(subjects).toContain(`Task ${id}|phaseloop|phaseloop`);
      expect(subjects).toContain(`Merge task ${id}: Task ${id}|phaseloop|phaseloop`);
    }
    // the user's config is untouched
    expect(gitOut(dir, "config", "--local", "--get", "user.name")).toBe("");
    const ev = events(dir);
    // lanes ran at once: a second lane started before the first was merged
    const firstMerge = ev.findIndex((e) => e.type === "lane.merged");
    expect(ev.slice(0, firstMerge).filter((e) => e.type === "lane.started").length).toBeGreaterThan(1);
    // a lane's events carry its task
    for (const e of ev.filter((x) => x.type === "phase.finished")) expect(["a", "b", "c", "d", "e"]).toContain(e.task);
    expect(r.stdout).toMatch(/\[c\] iteration 1 · verify succeeded/);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete", reason: { code: "tasks_done" } });
    const status = cli(["status", "--json"], dir);
    expect(status.code).toBe(0);
  }, 120_000);

  it("starts a task only once the tasks it depends on are merged, from the commit they left", () => {
    const dir = laneRepo({ a: {}, b: { deps: ["a"] }, c: { deps: ["b"] }, x: {} }, 3);
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    const ev = events(dir);
    const at = (type: string, task: string) => ev.findIndex((e) => e.type === type && e.task === task);
    expect(at("lane.merged", "a")).toBeLessThan(at("lane.started", "b"));
    expect(at("lane.merged", "b")).toBeLessThan(at("lane.started", "c"));
    // b's lane started from the commit that merged a
    const mergedA = ev[at("lane.merged", "a")]!.commit;
    expect(ev[at("lane.started", "b")]!.base).toBe(mergedA);
    expectTidy(dir);
  }, 120_000);

  it("merges one of two tasks that edit the same line and keeps the other's work on its branch, named everywhere", () => {
    const dir = laneRepo({ one: { line: "from one" }, two: { line: "from two" } }, 2);
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    const ev = events(dir);
    const merged = ev.filter((e) => e.type === "lane.merged").map((e) => e.task);
    expect(merged).toHaveLength(1);
    const loser = merged[0] === "one" ? "two" : "one";
    const blocked = ev.find((e) => e.type === "lane.blocked")!;
    expect(blocked).toMatchObject({ task: loser, status: "blocked", conflicts: ["shared.txt"] });
    expect(ev.some((e) => e.type === "lane.conflict" && e.task === loser)).toBe(true);
    // nothing is lost: the blocked task's work is on the branch it names
    const branch = blocked.branch as string;
    expect(gitOut(dir, "show", `${branch}:shared.txt`)).toBe(`line: from ${loser}`);
    expect(readFileSync(join(dir, "shared.txt"), "utf8")).toBe(`line: from ${merged[0]}\n`);
    expectTidy(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "blocked", reason: { code: "tasks_blocked" } });
    const status = cli(["status"], dir);
    expect(status.stdout).toContain(branch);
    expect(status.stdout).toContain("shared.txt");
    const summary = readFileSync(join(runDir(dir), "summary.md"), "utf8");
    expect(summary).toContain(branch);
    expect(summary).toContain("shared.txt");
  }, 120_000);

  it("refuses parallel lanes outside git with a located error, and a workdir with uncommitted changes with what to do", () => {
    const plain = tempDir();
    write(plain, { "p.yaml": LANES_PIPELINE(2), "tasks/a.md": "# A\n" });
    const r = cli(["run", "p.yaml"], plain);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/p\.yaml:\d+:\d+: error LANES_NEED_GIT /);
    expect(existsSync(join(plain, ".phaseloop", "runs"))).toBe(false);

    const dir = laneRepo({ a: {} });
    write(dir, { "README.md": "changed\n" });
    const d = cli(["run", "p.yaml"], dir);
    expect(d.code).toBe(2);
    expect(d.stderr).toMatch(/uncommitted changes \(README\.md\).*commit or stash/);
    // --parallel 1 is today's single loop, in the workdir, whatever its state
    const one = cli(["run", "p.yaml", "--parallel", "1", "--reporter", "plain"], dir);
    expect(one.code).toBe(0);
    expect(one.stdout).not.toMatch(/in its lane|\[a\]/);
  }, 120_000);

  it("writes a JSON task source back in the commit that merges each task, without conflicts between lanes", () => {
    const dir = tempDir("phaseloop-lanes-");
    const stories = ["s1", "s2", "s3"].map((id) => ({ id, title: `Story ${id}`, description: id, passes: false }));
    write(dir, {
      "prd.json": JSON.stringify({ userStories: stories }, null, 2) + "\n",
      "p.yaml": `phaseloop: 1
name: prd
agents:
  w: { command: [sh, -c, 'cat > /dev/null; echo "$T" > "out-$T.txt"'] }
tools:
  build: { read: ["**"], write: ["**"] }
tasks:
  source: { file: prd.json, pointer: /userStories, fields: { done: passes }, write_back: true }
  parallel: 3
phases:
  execute: { agent: w, tools: build, prompt: "x", env: { T: "{{ task.id }}" } }
  verify:
    run: "test -f out-{{ task.id }}.txt"
    next:
      - if: exit_code == 0
        task: done
        goto: execute
      - goto: execute
stop: { max_iterations: 9 }
`,
    });
    git(dir, "init", "-q", "-b", "main");
    git(dir, "add", "-A");
    git(dir, "commit", "-qm", "start");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const prd = JSON.parse(readFileSync(join(dir, "prd.json"), "utf8")) as { userStories: { passes: boolean }[] };
    expect(prd.userStories.map((s) => s.passes)).toEqual([true, true, true]);
    expectTidy(dir);
  }, 120_000);

  it("merges into another branch with --into, leaving the workdir's branch as it was", () => {
    const dir = laneRepo({ a: {}, b: {} }, 2);
    const before = gitOut(dir, "rev-parse", "main");
    const r = cli(["run", "p.yaml", "--into", "integration", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(gitOut(dir, "rev-parse", "main")).toBe(before);
    expect(gitOut(dir, "show", "integration:out-a.txt")).toBe("a");
    expect(gitOut(dir, "show", "integration:out-b.txt")).toBe("b");
    expectTidy(dir);
  }, 120_000);
});

describe("the end of a run with lanes", () => {
  it("runs the final gate once, on the merged result in the workdir", () => {
    const dir = laneRepo({ a: {}, b: {} }, 2);
    const yaml = readFileSync(join(dir, "p.yaml"), "utf8")
      .replace('  parallel: 2\n', '  parallel: 2\n  final_gate: gate\n')
      .replace("stop:\n", '  gate:\n    run: "test -f out-a.txt && test -f out-b.txt && pwd > gate-ran-in.txt"\n    next:\n      - if: exit_code == 0\n        stop: complete\n      - stop: failed\nstop:\n');
    write(dir, { "p.yaml": yaml });
    git(dir, "commit", "-qam", "gate");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const ev = events(dir);
    const gate = ev.filter((e) => e.type === "phase.finished" && e.phase === "gate");
    expect(gate).toHaveLength(1);
    expect(gate[0]!.task).toBeUndefined();
    expect(ev.findIndex((e) => e.type === "phase.started" && e.phase === "gate")).toBeGreaterThan(ev.findLastIndex((e) => e.type === "lane.merged"));
    expect(readFileSync(join(dir, "gate-ran-in.txt"), "utf8").trim()).toBe(gitOut(dir, "rev-parse", "--show-toplevel"));
  }, 120_000);

  it("works only the task tasks.only names", () => {
    const dir = laneRepo({ a: {}, b: {}, c: {} }, 2);
    write(dir, { "p.yaml": readFileSync(join(dir, "p.yaml"), "utf8").replace("  parallel: 2\n", '  parallel: 2\n  only: "{{ params.story }}"\n').replace("agents:", "params:\n  story: { type: string }\nagents:") });
    git(dir, "commit", "-qam", "only");
    const r = cli(["run", "p.yaml", "--param", "story=b", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(events(dir).filter((e) => e.type === "lane.merged").map((e) => e.task)).toEqual(["b"]);
    expect(existsSync(join(dir, "out-a.txt"))).toBe(false);
  }, 120_000);

  it("stops every lane when the lanes together reach max_duration, keeping each one's work on its branch", () => {
    const dir = laneRepo({ a: {}, b: {}, c: {} }, 3, "30");
    write(dir, { "p.yaml": readFileSync(join(dir, "p.yaml"), "utf8").replace("stop:\n  max_iterations: 20", "stop:\n  max_iterations: 20\n  max_duration: 3s") });
    git(dir, "commit", "-qam", "limit");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(3);
    const ev = events(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "stopped", reason: { code: "max_duration" } });
    expect(ev.filter((e) => e.type === "lane.blocked").map((e) => [e.task, e.status]).sort()).toEqual([["a", "stopped"], ["b", "stopped"], ["c", "stopped"]]);
    expectTidy(dir);
  }, 120_000);
});
