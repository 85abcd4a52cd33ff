import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, events, git, ROOT, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const SCRIPTED = join(ROOT, "test/fixtures/agents/scripted.mjs");
const agent = `node ${SCRIPTED}`;
const recipe = (name: string) => join(ROOT, "pipelines", `${name}.yaml`);
const play = (dir: string, steps: Record<string, unknown[]>) => write(dir, { "play.json": JSON.stringify(steps) });
const prompt = (dir: string, role: string, n: number) => readFileSync(join(dir, ".phaseloop/play", `${role}-${n}.prompt`), "utf8");
const calls = (dir: string, role: string) => (existsSync(join(dir, ".phaseloop/play", `${role}.count`)) ? Number(readFileSync(join(dir, ".phaseloop/play", `${role}.count`), "utf8")) : 0);
// the scripted stand-in keeps its play state under .phaseloop/, which the OS sandbox never lets an agent write
const run = (dir: string, name: string, ...params: string[]) => cli(["run", recipe(name), "--reporter", "plain", "--sandbox", "off", "--param", `agent=${agent}`, ...params.flatMap((p) => ["--param", p])], dir);
const finished = (dir: string) => events(dir).at(-1) as { outcome: string; reason: { code: string; message: string } };

describe("ralph", () => {
  it("repeats the prompt until the check passes", () => {
    const dir = tempDir();
    write(dir, { "PROMPT.md": "make done.txt" });
    play(dir, { work: [{ files: { "a.txt": "1" } }, { files: { "done.txt": "yes" } }] });
    const r = run(dir, "ralph", "check=test -f done.txt");
    expect(r.code).toBe(0);
    expect(calls(dir, "work")).toBe(2);
    expect(prompt(dir, "work", 2)).toMatch(/Changed in the last iteration: a\.txt/);
  });
  it("stops on no progress when the agent changes nothing", () => {
    const dir = tempDir();
    write(dir, { "PROMPT.md": "x" });
    play(dir, { work: [{ stdout: "I did it, trust me" }] });
    const r = run(dir, "ralph", "check=false");
    expect(r.code).toBe(3);
    expect(finished(dir).reason.code).toBe("no_progress");
  });
});

describe("execute-review", () => {
  const toml = (pending: string[], blocker = "") => `loop = 1\nsummary = "s"\nblocker = "${blocker}"\n${pending.map((p) => `\n[[pending]]\nitem = "${p}"\n`).join("")}`;
  it("completes on a bold STATUS: COMPLETE once the check verifies it", () => {
    const dir = tempDir();
    write(dir, { "TASK.md": "do it" });
    play(dir, { execute: [{ stdout: "done\n**STATUS: COMPLETE**\n", files: { "out.txt": "x" } }] });
    const r = run(dir, "execute-review", "check=test -f out.txt");
    expect(r.code).toBe(0);
    expect(calls(dir, "review")).toBe(0);
  });
  it("goes through review with pending items, carrying them and the measured changes into the next loop", () => {
    const dir = tempDir();
    write(dir, { "TASK.md": "do it" });
    play(dir, {
      execute: [{ stdout: "STATUS: INCOMPLETE\nNEXT STEPS:\n- finish b\n", files: { "a.txt": "a" } }, { stdout: "STATUS: INCOMPLETE\n", files: { "b.txt": "b" } }],
      review: [{ files: { "$PHASELOOP_ARTIFACTS/review_output.toml": toml(["write b.txt"]) } }, { files: { "$PHASELOOP_ARTIFACTS/review_output.toml": toml([]) } }],
    });
    const r = run(dir, "execute-review", "check=test -f b.txt");
    expect(r.code).toBe(0);
    expect(prompt(dir, "review", 1)).toMatch(/files changed this loop: a\.txt/);
    expect(prompt(dir, "execute", 2)).toMatch(/Pending items from the last review\n.*write b\.txt/);
    expect(prompt(dir, "execute", 2)).toMatch(/files changed in the last loop: a\.txt/);
  });
  it("stops blocked with the reviewer's blocker", () => {
    const dir = tempDir();
    write(dir, { "TASK.md": "do it" });
    play(dir, { execute: [{ stdout: "STATUS: INCOMPLETE\n", files: { "a.txt": "a" } }], review: [{ files: { "$PHASELOOP_ARTIFACTS/review_output.toml": toml(["x"], "needs an API key") } }] });
    const r = run(dir, "execute-review");
    expect(r.code).toBe(3);
    expect(finished(dir)).toMatchObject({ outcome: "blocked", reason: { message: "review: needs an API key" } });
  });
  it("never reads the last loop's review file as this loop's verdict", () => {
    const dir = tempDir();
    write(dir, { "TASK.md": "do it" });
    // the first review writes "nothing pending"; the second writes nothing at all
    play(dir, { execute: [{ stdout: "STATUS: INCOMPLETE\n", files: { "a.txt": "1" } }, { stdout: "STATUS: INCOMPLETE\n", files: { "a.txt": "2" } }], review: [{ files: { "$PHASELOOP_ARTIFACTS/review_output.toml": toml(["more"]) } }, {}] });
    const r = run(dir, "execute-review", "check=false", "loops=2");
    expect(r.code).toBe(3);
    const reviews = events(dir).filter((e) => e.type === "phase.finished" && e.phase === "review");
    expect(reviews.map((e) => e.error)).toEqual([null, "output_invalid"]);
  });
});

describe("plan-execute-review", () => {
  it("interprets once, feeds the review's issues into the next plan, and completes when ready to deploy", () => {
    const dir = tempDir();
    play(dir, {
      interpret: [{ stdout: "It means adding a flag." }],
      plan: [{ stdout: "PLAN:\n- add the flag\n" }, { stdout: "PLAN:\n- fix the help text\n" }],
      execute: [{ files: { "cli.txt": "flag" } }, { files: { "help.txt": "help" } }],
      review: [{ stdout: "ISSUES:\n- the help text is missing\n<verdict>NOT_READY</verdict>" }, { stdout: "ISSUES:\n\n<verdict>READY_TO_DEPLOY</verdict>" }],
    });
    const r = run(dir, "plan-execute-review", "goal=add a flag");
    expect(r.code).toBe(0);
    expect(calls(dir, "interpret")).toBe(1);
    expect(prompt(dir, "plan", 2)).toMatch(/Issues the last review found.*\n- the help text is missing/);
    expect(prompt(dir, "execute", 2)).toMatch(/- fix the help text/);
  });
  it("counts a missing verdict as not ready and stops at the limit with exit 3", () => {
    const dir = tempDir();
    play(dir, { plan: [{ stdout: "PLAN:\n- x\n" }], execute: [{ files: { "f.txt": String(Math.random()) } }], review: [{ stdout: "looks great!" }] });
    const r = run(dir, "plan-execute-review", "goal=g", "max=2");
    expect(r.code).toBe(3);
    expect(finished(dir).reason.code).toMatch(/max_iterations|no_progress/);
  });
});

describe("supervisor", () => {
  const tasks = {
    "tasks/001-setup.md": "---\npriority: 1\n---\n# Set up\nCreate the base.\n",
    "tasks/002-feature.md": "# Feature\n<!-- depends_on: 001-setup -->\nBuild on it.\n",
    "tasks/003-docs.md": "---\npriority: 3\n---\n# Docs\n",
  };
  it("works the queue in dependency order and completes through the final gate", () => {
    const dir = tempDir();
    git(dir, "init", "-q");
    write(dir, tasks);
    const r = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", 'agent=cat > "prompt-$PHASELOOP_TASK.txt"; touch "done-$PHASELOOP_TASK"', "--param", "verify=test -f done-$PHASELOOP_TASK || test -z \"$PHASELOOP_TASK\""], dir);
    expect(r.code).toBe(0);
    const order = events(dir).filter((e) => e.type === "task.updated" && e.status === "done").map((e) => e.task);
    // priority first (002 has none, so it comes last), and never before its dependency
    expect(order).toEqual(["001-setup", "003-docs", "002-feature"]);
    expect(readFileSync(join(dir, "prompt-002-feature.txt"), "utf8")).toMatch(/# Task 002-feature: Feature/);
  });
  it("blocks a task after its attempts, blocks its dependents with the reason, and finishes the rest blocked", () => {
    const dir = tempDir();
    write(dir, tasks);
    const r = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", 'agent=cat >/dev/null; echo $RANDOM > "work-$PHASELOOP_TASK-$PHASELOOP_ITERATION"', "--param", 'verify=test "$PHASELOOP_TASK" != 001-setup', "--param", "task_attempts=2"], dir);
    expect(r.code).toBe(3);
    const updates = events(dir).filter((e) => e.type === "task.updated");
    expect(updates).toContainEqual(expect.objectContaining({ task: "001-setup", status: "blocked" }));
    expect(updates).toContainEqual(expect.objectContaining({ task: "002-feature", status: "blocked", reason: "dependency 001-setup is blocked" }));
    expect(updates).toContainEqual(expect.objectContaining({ task: "003-docs", status: "done" }));
    expect(finished(dir).reason.code).toBe("tasks_blocked");
  });
  it("reopens the last task when the final gate fails, and runs the hooks", () => {
    const dir = tempDir();
    write(dir, { "tasks/001-only.md": "# Only\n" });
    // the gate (no current task) fails the first time it runs, then passes
    const verify = 'if [ -z "$PHASELOOP_TASK" ]; then if [ -f gate-failed ]; then exit 0; else touch gate-failed; exit 1; fi; fi; exit 0';
    const r = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", 'agent=cat >/dev/null; date +%N >> work.log', "--param", `verify=${verify}`, "--param", "on_complete=echo \"$PHASELOOP_OUTCOME\" > outcome.txt"], dir);
    expect(r.code).toBe(0);
    const ev = events(dir);
    expect(ev).toContainEqual(expect.objectContaining({ type: "task.updated", task: "001-only", status: "pending", reason: "the final gate failed" }));
    expect(readFileSync(join(dir, "outcome.txt"), "utf8").trim()).toBe("complete");
  });
});

describe("generator-evaluator", () => {
  const prd = {
    userStories: [
      { id: "US-002", title: "Second", priority: 2, passes: false, description: "two" },
      { id: "US-001", title: "First", priority: 1, passes: false, description: "one" },
      { id: "US-003", title: "Third", priority: 3, passes: false, description: "three" },
    ],
  };
  const setup = (steps: Record<string, unknown[]>) => {
    const dir = tempDir();
    write(dir, { ".loop/prd.json": JSON.stringify(prd, null, 2) });
    play(dir, steps);
    return dir;
  };
  const stories = (dir: string) => JSON.parse(readFileSync(join(dir, ".loop/prd.json"), "utf8")).userStories as Record<string, unknown>[];

  it("works stories by priority, retries a rejection, writes back, and logs progress", () => {
    const dir = setup({
      generate: [{ append: { "work.txt": "1\n" } }, { append: { "work.txt": "2\n" } }, { append: { "work.txt": "3\n" } }, { append: { "work.txt": "4\n" } }],
      evaluate: [{ stdout: "<verdict>REJECT</verdict><rejection_reason>no tests</rejection_reason>" }, { stdout: "<verdict>PASS</verdict>" }],
    });
    const r = run(dir, "generator-evaluator");
    expect(r.code).toBe(0);
    expect(prompt(dir, "generate", 1)).toMatch(/^# US-001: First/);
    expect(prompt(dir, "generate", 2)).toMatch(/\[REJECTED\] no tests/);
    expect(stories(dir).map((s) => [s.id, s.passes])).toEqual([["US-002", true], ["US-001", true], ["US-003", true]]);
    // the rejection and its reason are written back, as the seed does
    expect(stories(dir).find((s) => s.id === "US-001")).toMatchObject({ rejections: 1, notes: expect.stringContaining("[REJECTED] no tests") });
    expect(prompt(dir, "generate", 2).match(/\[REJECTED\] no tests/g)).toHaveLength(1);
    const progress = readFileSync(join(dir, ".loop/progress.md"), "utf8");
    expect(progress).toMatch(/### US-001 — First\nIteration: 1\nVerdict: REJECT\n\[REJECTED\] no tests/);
    expect(progress.match(/Verdict: PASS/g)).toHaveLength(3);
  });

  it("counts a missing verdict as REJECT and blocks a story after eval_retries rejections", () => {
    const dir = setup({ generate: [{ append: { "w.txt": "x\n" } }], evaluate: [{ stdout: "I think it is fine" }] });
    const r = run(dir, "generator-evaluator", "eval_retries=2", "story=US-002");
    expect(r.code).toBe(3);
    const us2 = stories(dir).find((s) => s.id === "US-002")!;
    expect(us2).toMatchObject({ passes: false, blocked: true, rejections: 2 });
    expect(String(us2.notes).split("\n")).toEqual(["[REJECTED] no reason given", "[BLOCKED] not done after 2 attempts; last: no reason given"]);
    expect(calls(dir, "evaluate")).toBe(2);
  });

  it("evaluates the last story even when the generator claims the whole job is complete", () => {
    const dir = setup({ generate: [{ stdout: "<promise>COMPLETE</promise>", append: { "w.txt": "x\n" } }], evaluate: [{ stdout: "<verdict>REJECT</verdict>" }] });
    const r = run(dir, "generator-evaluator", "story=US-003", "eval_retries=1");
    expect(r.code).toBe(3);
    expect(calls(dir, "evaluate")).toBe(1);
    expect(stories(dir).find((s) => s.id === "US-003")!.passes).toBe(false);
  });

  it("works one story with --param story and skips the evaluator with --param skip_eval", () => {
    const dir = setup({ generate: [{ append: { "w.txt": "x\n" } }] });
    const r = run(dir, "generator-evaluator", "story=US-003", "skip_eval=true");
    expect(r.code).toBe(0);
    expect(calls(dir, "evaluate")).toBe(0);
    expect(stories(dir).map((s) => s.passes)).toEqual([false, false, true]);
    expect(readFileSync(join(dir, ".loop/progress.md"), "utf8")).toMatch(/Verdict: SKIP-EVAL/);
  });
});

describe("every recipe", () => {
  // the recipes' default agents are Claude Code and Codex: a dry run checks that they are installed
  const bin = tempDir();
  for (const name of ["claude", "codex"]) {
    write(bin, { [`${name}.sh`]: "#!/bin/sh\necho 1.0.0\n" });
    spawnSync("mv", [join(bin, `${name}.sh`), join(bin, name)]);
  }
  const withClaude = { PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}` };
  for (const f of readdirSync(join(ROOT, "pipelines")).filter((x) => x.endsWith(".yaml"))) {
    it(`${f} documents itself and shows its commands on a dry run`, () => {
      const text = readFileSync(join(ROOT, "pipelines", f), "utf8");
      expect(text).toMatch(/^# yaml-language-server/);
      expect(text).toMatch(/# Params:/);
      expect(text).toMatch(/# Run:/);
      const r = cli(["run", join(ROOT, "pipelines", f), "--dry-run", "--param", "goal=x"].filter((a, i, all) => !(f !== "plan-execute-review.yaml" && (a === "goal=x" || (a === "--param" && all[i + 1] === "goal=x")))), tempDir(), withClaude);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
    });
  }
});
