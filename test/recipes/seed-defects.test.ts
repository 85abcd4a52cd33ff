// Each recipe against its seed: what the seed put in its agents' prompts, and
// every defect of the seeds that phaseloop must not repeat, played by scripted
// agents through the CLI.
import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, events, git, ROOT, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const SCRIPTED = join(ROOT, "test/fixtures/agents/scripted.mjs");
const agent = `node ${SCRIPTED}`;
const recipe = (name: string) => join(ROOT, "pipelines", `${name}.yaml`);
const play = (dir: string, steps: Record<string, unknown[]>) => write(dir, { "play.json": JSON.stringify(steps) });
const prompt = (dir: string, role: string, n: number) => readFileSync(join(dir, ".phaseloop/play", `${role}-${n}.prompt`), "utf8");
// the scripted stand-in keeps its play state under .phaseloop/, which the OS sandbox never lets an agent write
const run = (dir: string, name: string, ...params: string[]) => cli(["run", recipe(name), "--reporter", "plain", "--sandbox", "off", "--param", `agent=${agent}`, ...params.flatMap((p) => ["--param", p])], dir);
const finished = (dir: string) => events(dir).at(-1) as { outcome: string; reason: { code: string; message: string } };
const phaseEnds = (dir: string, phase: string) => events(dir).filter((e) => e.type === "phase.finished" && e.phase === phase);
const toml = (pending: string[], blocker = "") => `loop = 1\nsummary = "s"\nblocker = "${blocker}"\n${pending.map((p) => `\n[[pending]]\nitem = "${p}"\n`).join("")}`;

describe("ralph (cat PROMPT.md | agent)", () => {
  it("gives the agent PROMPT.md's content, and exactly that with notes=false", () => {
    const dir = tempDir();
    write(dir, { "PROMPT.md": "Build the parser.\nKeep {{ params.check }} as written.\n" });
    play(dir, { work: [{ files: { "a.txt": "1" } }, { files: { "done.txt": "y" } }] });
    expect(run(dir, "ralph", "check=test -f done.txt").code).toBe(0);
    // the file's content, never rendered as a template itself
    expect(prompt(dir, "work", 1)).toMatch(/^Build the parser\.\nKeep \{\{ params\.check \}\} as written\.\n/);
    expect(prompt(dir, "work", 2)).toMatch(/Files changed so far \(measured\): a\.txt/);

    const exact = tempDir();
    write(exact, { "PROMPT.md": "Only this.\n" });
    play(exact, { work: [{ files: { "done.txt": "y" } }] });
    expect(run(exact, "ralph", "check=test -f done.txt", "notes=false").code).toBe(0);
    expect(prompt(exact, "work", 1)).toBe("Only this.\n");
  });

  it("fails the phase, clearly, when the prompt file is missing or leads outside the workdir", () => {
    const dir = tempDir();
    play(dir, { work: [{ files: { "done.txt": "y" } }] });
    expect(run(dir, "ralph", "check=test -f done.txt", "max=1").code).toBe(3);
    expect(phaseEnds(dir, "work")[0]).toMatchObject({ status: "failed", error: "spawn_error", message: expect.stringContaining('file("PROMPT.md"): no such file in the workdir') });
    expect(existsSync(join(dir, "done.txt"))).toBe(false);

    const out = tempDir();
    symlinkSync("/etc/hostname", join(out, "PROMPT.md"));
    play(out, { work: [{}] });
    expect(run(out, "ralph", "check=false", "max=1").code).toBe(3);
    expect(phaseEnds(out, "work")[0]).toMatchObject({ error: "spawn_error", message: expect.stringContaining("outside the workdir") });
  });
});

describe("execute-review (code-scribe)", () => {
  it("injects the task file up front, says not to re-read it, and carries the files of all loops and the last check", () => {
    const dir = tempDir();
    write(dir, { "TASK.md": "Write a.txt, b.txt and c.txt.\n" });
    play(dir, {
      execute: [{ stdout: "STATUS: INCOMPLETE\n", files: { "a.txt": "a" } }, { stdout: "STATUS: INCOMPLETE\n", files: { "b.txt": "b" } }, { stdout: "STATUS: COMPLETE\n", files: { "c.txt": "c" } }],
      review: [{ files: { "$PHASELOOP_ARTIFACTS/review_output.toml": toml(["more"]) } }],
    });
    expect(run(dir, "execute-review", "check=test -f c.txt").code).toBe(0);
    const first = prompt(dir, "execute", 1);
    expect(first).toContain("Write a.txt, b.txt and c.txt.");
    expect(first).toMatch(/do not re-read `TASK\.md`/);
    const third = prompt(dir, "execute", 3);
    expect(third).toContain("Write a.txt, b.txt and c.txt.");
    expect(third).toMatch(/files changed across all loops: a\.txt, b\.txt/);
    expect(third).toMatch(/files changed in the last loop: b\.txt/);
  });

  it("does not believe a reviewer that wrote outside its allowlist", () => {
    const dir = tempDir();
    write(dir, { "TASK.md": "do it" });
    // the review says nothing is pending, but it edited src/ (its tool set writes only the artifacts folder)
    const review = (n: number) => ({ files: { "$PHASELOOP_ARTIFACTS/review_output.toml": toml([]), "src/hack.ts": `x${n}` } });
    play(dir, { execute: [{ stdout: "STATUS: INCOMPLETE\n", files: { "a.txt": "1" } }, { stdout: "STATUS: INCOMPLETE\n", files: { "a.txt": "2" } }], review: [review(1), review(2)] });
    const r = run(dir, "execute-review", "loops=2");
    expect(r.code).toBe(3);
    expect(phaseEnds(dir, "review").map((e) => [e.error, e.output])).toEqual([["policy_violation", {}], ["policy_violation", {}]]);
    expect(events(dir).some((e) => e.type === "phase.started" && e.phase === "verify")).toBe(false);
    expect(finished(dir).outcome).not.toBe("complete");
  });
});

describe("plan-execute-review (cli_engineer)", () => {
  it("puts the interpretation and every file changed so far into every plan", () => {
    const dir = tempDir();
    play(dir, {
      interpret: [{ stdout: "It means adding a --json flag to the list command." }],
      plan: [{ stdout: "PLAN:\n- a\n" }],
      execute: [{ files: { "one.txt": "1" } }, { files: { "two.txt": "2" } }, { files: { "three.txt": "3" } }],
      review: [{ stdout: "ISSUES:\n- more\n<verdict>NOT_READY</verdict>" }, { stdout: "ISSUES:\n- more\n<verdict>NOT_READY</verdict>" }, { stdout: "<verdict>READY_TO_DEPLOY</verdict>" }],
    });
    expect(run(dir, "plan-execute-review", "goal=add a flag").code).toBe(0);
    for (const n of [1, 2, 3]) expect(prompt(dir, "plan", n)).toContain("It means adding a --json flag to the list command.");
    expect(prompt(dir, "plan", 3)).toContain('{"one.txt":1,"two.txt":2}');
    expect(prompt(dir, "execute", 3)).toMatch(/Existing files \(changed so far in this work\): one\.txt, two\.txt/);
  });

  it("does not believe a reviewer that wrote outside its read-only allowlist", () => {
    const dir = tempDir();
    const review = (n: number) => ({ stdout: "<verdict>READY_TO_DEPLOY</verdict>", files: { "src/fixed.ts": `x${n}` } });
    play(dir, { plan: [{ stdout: "PLAN:\n- x\n" }], execute: [{ files: { "f.txt": "1" } }, { files: { "f.txt": "2" } }], review: [review(1), review(2)] });
    const r = run(dir, "plan-execute-review", "goal=g", "max=2");
    expect(r.code).toBe(3);
    expect(finished(dir).reason.code).toBe("max_iterations");
  });
});

describe("supervisor (codex-loop)", () => {
  it("never marks a task done with an empty verification command", () => {
    const dir = tempDir();
    write(dir, { "tasks/001-only.md": "# Only\n" });
    const r = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", 'agent=cat >/dev/null; date +%N >> work.log', "--param", "verify=", "--param", "max=4"], dir);
    expect(r.code).toBe(3);
    expect(events(dir).filter((e) => e.type === "task.updated" && e.status === "done")).toEqual([]);
    expect(events(dir).filter((e) => e.type === "note").map((e) => e.message)).toContain('cannot render phase "verify": run: the script given to sh -c is empty once rendered');
    const blank = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", 'agent=cat >/dev/null; date +%N >> work.log', "--param", "verify=   ", "--param", "max=2"], dir);
    expect(blank.code).toBe(3);
  });

  it("reads 'tokens used: 15003' as a plain failure, not an HTTP 500 to retry", () => {
    const dir = tempDir();
    write(dir, { "tasks/001-only.md": "# Only\n" });
    const r = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", "agent=cat >/dev/null; echo 'tokens used: 15003'; exit 1", "--param", "verify=true", "--param", "max=1"], dir);
    expect(r.code).toBe(0); // the verification decides, as in the seed
    expect(phaseEnds(dir, "implement")[0]).toMatchObject({ error: "exit_nonzero" });
    expect(events(dir).filter((e) => e.type === "phase.retry")).toEqual([]);
  });

  it("trips no_progress by each iteration's own diff, though the cumulative diff stays non-empty", () => {
    const dir = tempDir();
    git(dir, "init", "-q");
    write(dir, { "tasks/001-only.md": "# Only\n", "base.txt": "0\n" });
    git(dir, "add", ".");
    git(dir, "commit", "-qm", "base");
    // the first attempt changes a tracked file, the later ones nothing; verification keeps failing
    const r = cli(["run", recipe("supervisor"), "--reporter", "plain", "--param", "agent=cat >/dev/null; test -f once || { touch once; echo 1 >> base.txt; }", "--param", "verify=false", "--param", "task_attempts=20"], dir);
    expect(r.code).toBe(3);
    expect(finished(dir).reason.code).toBe("no_progress");
  });

  it("recovers the run lock after a crash and resumes", async () => {
    const dir = tempDir();
    write(dir, { "tasks/001-only.md": "# Only\n" });
    const p = cliAsync(["run", recipe("supervisor"), "--reporter", "plain", "--param", "agent=cat >/dev/null; test -f slept || { touch slept; sleep 30; }; echo x >> work.log", "--param", "verify=test -f work.log"], dir);
    for (let i = 0; i < 400 && !existsSync(join(dir, "slept")); i++) await new Promise((r) => setTimeout(r, 50));
    p.child.kill("SIGKILL");
    await p.done;
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(finished(dir).outcome).toBe("complete");
  }, 60_000);
});

describe("generator-evaluator (agent-loop)", () => {
  const prd = { userStories: [{ id: "US-001", title: "First", priority: 1, passes: false, description: "one" }] };
  const setup = (steps: Record<string, unknown[]>) => {
    const dir = tempDir();
    write(dir, { ".loop/prd.json": JSON.stringify(prd, null, 2) });
    play(dir, steps);
    return dir;
  };
  const story = (dir: string) => (JSON.parse(readFileSync(join(dir, ".loop/prd.json"), "utf8")) as typeof prd).userStories[0]!;

  it("does not pass a story on a PASS from an evaluator that edited src/", () => {
    const dir = setup({ generate: [{ append: { "w.txt": "x\n" } }], evaluate: [{ stdout: "<verdict>PASS</verdict>", files: { "src/fix.ts": "x" } }] });
    const r = run(dir, "generator-evaluator", "eval_retries=1");
    expect(r.code).toBe(3);
    expect(story(dir).passes).toBe(false);
    expect(readFileSync(join(dir, ".loop/progress.md"), "utf8")).toMatch(/Verdict: EVALUATOR-FAILED\n\[REJECTED\] the evaluator failed: changed files outside the write scope: src\/fix\.ts/);
  });

  it("puts the seed's own prompt files first with --param prompts, as read, never rendered", () => {
    const dir = setup({ generate: [{ append: { "w.txt": "x\n" } }], evaluate: [{ stdout: "<verdict>PASS</verdict>" }] });
    write(dir, { ".loop/prompts/generator/_base.md": "BASE {{MODE}}", ".loop/prompts/generator/auto.md": "AUTO", ".loop/prompts/evaluator/_base.md": "EVAL", ".loop/prompts/evaluator/auto.md": "EAUTO" });
    expect(run(dir, "generator-evaluator", "prompts=.loop/prompts").code).toBe(0);
    expect(prompt(dir, "generate", 1)).toMatch(/^BASE \{\{MODE\}\}\n---\nAUTO\n---\n\n# US-001: First/);
    expect(prompt(dir, "evaluate", 1)).toMatch(/^EVAL\n---\nEAUTO\n---\n\nEvaluate story US-001/);
  });

  it("with skip_eval, does not pass a story whose generator failed", () => {
    const dir = setup({ generate: [{ append: { "w.txt": "x\n" }, exit: 1 }] });
    const r = run(dir, "generator-evaluator", "skip_eval=true", "eval_retries=2");
    expect(r.code).toBe(3);
    expect(story(dir)).toMatchObject({ passes: false, blocked: true });
    expect(readFileSync(join(dir, ".loop/progress.md"), "utf8")).toMatch(/Verdict: GENERATOR-FAILED/);
  });
});

describe("a command that runs nothing", () => {
  it("is a located error at validation", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": "phaseloop: 1\nname: p\nphases:\n  a:\n    run: '   '\n    next:\n      - stop: complete\n  b:\n    run: [sh, -c, '']\nstop: { max_iterations: 1 }\n" });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr + r.stdout).toMatch(/p\.yaml:5:10: error EMPTY_COMMAND phase "a" runs nothing/);
    expect(r.stderr + r.stdout).toMatch(/p\.yaml:9:\d+: error EMPTY_COMMAND phase "b" runs nothing/);
  });
});

describe("file() outside a prompt", () => {
  it("is a located error at validation; in a prompt it is fine", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": "phaseloop: 1\nname: p\nagents:\n  a: { command: [cat] }\nphases:\n  w:\n    agent: a\n    prompt: \"{{ file('TASK.md') }} now\"\n  c:\n    run: [echo, \"{{ file('TASK.md') }}\"]\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n" });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr + r.stdout).toMatch(/p\.yaml:10:\d+: error FILE_OUTSIDE_PROMPT file\(\) is read only in an agent's prompt/);
    expect((r.stderr + r.stdout).match(/FILE_OUTSIDE_PROMPT/g)).toHaveLength(1);
  });
});
