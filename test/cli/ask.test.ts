import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, CLI, ensureBuilt, events, runDir, tempDir, write } from "./cli-helpers.ts";
import { skipped } from "../skip-reason.ts";

const hasScript = process.platform === "linux" && spawnSync("script", ["--version"]).status === 0;

beforeAll(() => ensureBuilt(), 120_000);

const PIPELINE = `phaseloop: 1
name: approve-plan
phases:
  plan:
    run: "echo plan >> plans.txt"
  approve:
    ask: "Review PLAN.md (iteration {{ iteration }}). Answer 'approve' or say what to change."
    timeout: 48h
    next:
      - if: answer == 'approve'
        goto: build
      - goto: plan
  build:
    run: [sh, -c, 'printf "%s" "$1" > built.txt', sh, "{{ phases.approve.answer }}"]
    next:
      - stop: complete
        reason: "built after {{ phases.approve.answer }}"
stop: { max_iterations: 3 }
`;

describe("ask: a question to a person", () => {
  it("without a terminal the run saves its state and exits 3; status shows the question; resume --answer continues", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE });
    const first = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(first.code).toBe(3);
    expect(first.stdout).toContain("approve asks: Review PLAN.md (iteration 1).");
    expect(first.stderr).toMatch(/awaiting answer: .*phaseloop resume \S+ --answer/);
    const status = cli(["status"], dir);
    expect(status.stdout).toMatch(/status\s+awaiting answer: phase approve asks: Review PLAN\.md \(iteration 1\)/);
    const json = JSON.parse(cli(["status", "--json"], dir).stdout);
    expect(json).toMatchObject({ state: "awaiting answer", question: { phase: "approve", question: expect.stringContaining("iteration 1") } });
    expect(readFileSync(join(runDir(dir), "summary.md"), "utf8")).toMatch(/awaiting answer[\s\S]*## Questions[\s\S]*> Review PLAN\.md \(iteration 1\)/);
    // the runs list says the same, not that it crashed
    expect(JSON.parse(cli(["runs", "--json"], dir).stdout)[0]).toMatchObject({ outcome: "awaiting answer", exit_code: 3 });

    // an answer that is not approve: back to plan, and the question again
    const second = cli(["resume", "--answer", "shorter, please", "--reporter", "plain"], dir);
    expect(second.code).toBe(3);
    expect(second.stdout).toContain("approve answered: shorter, please");
    expect(second.stdout).toContain("approve asks: Review PLAN.md (iteration 2).");

    // a resume without an answer asks again and waits again
    expect(cli(["resume", "--reporter", "plain"], dir).code).toBe(3);

    write(dir, { "answer.txt": "approve\n" });
    const third = cli(["resume", "--answer-file", "answer.txt", "--reporter", "plain"], dir);
    expect(third.code).toBe(0);
    expect(readFileSync(join(dir, "built.txt"), "utf8")).toBe("approve");
    expect(readFileSync(join(dir, "plans.txt"), "utf8")).toBe("plan\nplan\n");
    const ev = events(dir);
    expect(ev.filter((e) => e.type === "question.answered").map((e) => e.answer)).toEqual(["shorter, please", "approve"]);
    expect(ev.filter((e) => e.type === "question.asked").length).toBe(3);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete", reason: { message: "built after approve" } });
    const summary = readFileSync(join(runDir(dir), "summary.md"), "utf8");
    expect(summary).toContain("Answer: shorter, please");
    expect(summary).toContain("Answer: approve");
    expect(cli(["status"], dir).stdout).toMatch(/status\s+complete/);
  });

  it("--answer with --answer-file is a usage error (exit 2); a finished run keeps its exit code", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE.replace('"echo plan >> plans.txt"', '"sleep 0"') });
    expect(cli(["run", "p.yaml", "--reporter", "json"], dir).code).toBe(3);
    expect(cli(["resume", "--answer", "approve"], dir).code).toBe(0);
    const again = cli(["resume", "--answer", "approve"], dir);
    expect(again.code).toBe(0); // a finished run says so and keeps its exit code
    expect(again.stderr).toContain("already finished");
    expect(cli(["resume", "--answer", "a", "--answer-file", "b"], dir).code).toBe(2);
  });

  it("under GitHub Actions the question goes to the step summary and the job outputs", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE });
    const summary = join(dir, "step-summary.md");
    const output = join(dir, "github-output.txt");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir, { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary, GITHUB_OUTPUT: output });
    expect(r.code).toBe(3);
    expect(readFileSync(summary, "utf8")).toMatch(/waiting for an answer[\s\S]*> Review PLAN\.md \(iteration 1\)[\s\S]*phaseloop resume \S+ --answer/);
    const out = readFileSync(output, "utf8");
    expect(out).toContain("awaiting_answer=true\n");
    expect(out).toContain("question_phase=approve\n");
    expect(out).toMatch(/question<<(\w+)\nReview PLAN\.md \(iteration 1\)\. Answer 'approve' or say what to change\.\n\1\n/);
    expect(out).toMatch(/run_id=\S+\n/);
    expect(existsSync(join(dir, "built.txt"))).toBe(false);
  });

  it("validate knows answer and phases.NAME.answer, and refuses an ask phase with a prompt", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE, "bad.yaml": PIPELINE.replace("    timeout: 48h\n", "    timeout: 48h\n    prompt: nope\n") });
    expect(cli(["validate", "p.yaml"], dir).code).toBe(0);
    const bad = cli(["validate", "bad.yaml"], dir);
    expect(bad.code).toBe(2);
    expect(bad.stdout + bad.stderr).toMatch(/bad\.yaml:\d+:\d+: error SCHEMA/);
  });

  it.skipIf(skipped(!hasScript, "script(1) is not installed (util-linux)"))("in a terminal the question is asked in the live view and the run goes on with the typed answer", async () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE });
    // script(1) gives the CLI a terminal for stdin and stdout
    // under Deno the CLI still runs on Node: a terminal would make Deno ask for permissions
    const node = "Deno" in globalThis ? "node" : process.execPath;
    const command = `stty cols 100; exec ${JSON.stringify(node)} ${JSON.stringify(CLI)} run p.yaml --reporter tty`;
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", TERM: "xterm", NO_COLOR: "1" }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const code = new Promise<number | null>((res) => child.on("close", res));
    for (let i = 0; i < 400 && !out.includes("asks:"); i++) await new Promise((r) => setTimeout(r, 25));
    expect(out).toContain("approve asks: Review PLAN.md (iteration 1).");
    child.stdin.write("approve\n");
    expect(await code).toBe(0);
    expect(readFileSync(join(dir, "built.txt"), "utf8")).toBe("approve");
    expect(events(dir).filter((e) => e.type === "question.answered").map((e) => e.answer)).toEqual(["approve"]);
  }, 60_000);

  it("an answer given after the question's timeout is not used: the phase failed with timeout", async () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE.replace("timeout: 48h", "timeout: 1s") });
    expect(cli(["run", "p.yaml", "--reporter", "plain"], dir).code).toBe(3);
    await new Promise((r) => setTimeout(r, 1300));
    const late = cli(["resume", "--answer", "approve", "--reporter", "plain"], dir);
    expect(late.code).toBe(3); // back to plan, and the question again
    expect(late.stdout).toMatch(/longer than its timeout \(1s\): it failed with timeout/);
    const ev = events(dir);
    expect(ev.filter((e) => e.type === "question.answered")).toEqual([]);
    expect(existsSync(join(dir, "built.txt"))).toBe(false);
    expect(readFileSync(join(dir, "plans.txt"), "utf8")).toBe("plan\nplan\n");
  });
});
