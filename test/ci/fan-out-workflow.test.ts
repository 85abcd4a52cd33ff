/**
 * docs/examples/fan-out.yml, the workflow docs/ci.md shows: its structure, its
 * use of the action, and every phaseloop command it runs, run by the real CLI
 * in a repository shaped as the workflow expects (`run` with --dry-run).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import process from "node:process";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, ROOT, tempDir, write } from "../cli/cli-helpers.ts";
import { generatorEvaluatorRepo, phaseloopCommands, readYaml, substitute, type Yaml } from "./ci-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const FILE = "docs/examples/fan-out.yml";
const workflow = readYaml(FILE);
const action = readYaml("action.yml");
const jobs = workflow.jobs as Record<string, Yaml>;
const steps = (job: string) => jobs[job]!.steps as Yaml[];
const env = workflow.env as Record<string, string>;
const isAction = (step: Yaml) => typeof step.uses === "string" && /^phaseloop\/phaseloop@/.test(step.uses);

/** The words the action's run step makes of its `args` input (the same xargs). */
function actionArgs(args: string): string[] {
  const r = spawnSync("sh", ["-c", `printf '%s' "$ARGS" | xargs -r printf '%s\\0'`], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ARGS: args }, encoding: "utf8" });
  expect(r.status).toBe(0);
  return r.stdout.split("\0").slice(0, -1);
}

function fakeClaude(): string {
  const bin = tempDir("phaseloop-bin-");
  write(bin, { "claude.sh": "#!/bin/sh\necho STATUS: COMPLETE\n" });
  spawnSync("mv", [join(bin, "claude.sh"), join(bin, "claude")]);
  return bin;
}

describe("the fan-out workflow", () => {
  it("is the workflow docs/ci.md shows, verbatim", () => {
    const doc = readFileSync(join(ROOT, "docs/ci.md"), "utf8");
    expect(doc).toContain("```yaml\n" + readFileSync(join(ROOT, FILE), "utf8") + "```");
  });

  it("plans in one job and fans out a matrix over the plan's ready tasks in another", () => {
    expect(Object.keys(jobs)).toEqual(["plan", "work"]);
    const plan = jobs.plan!;
    expect(plan.outputs).toEqual({ tasks: "${{ steps.queue.outputs.tasks }}", count: "${{ steps.queue.outputs.count }}" });
    const queue = steps("plan").find((s) => s.id === "queue")!;
    expect(queue.run).toMatch(/echo "tasks=\$tasks" >> "\$GITHUB_OUTPUT"/);
    expect(queue.run).toMatch(/echo "count=.*" >> "\$GITHUB_OUTPUT"/);
    const work = jobs.work!;
    expect(work.needs).toBe("plan");
    expect(work.if).toBe("needs.plan.outputs.count != '0'");
    const strategy = work.strategy as Yaml;
    expect(strategy["fail-fast"]).toBe(false);
    expect(strategy.matrix).toEqual({ task: "${{ fromJSON(needs.plan.outputs.tasks) }}" });
    // each task on its own branch, and a pull request only for a task that is done
    expect((work.env as Yaml).BRANCH).toBe("phaseloop/${{ matrix.task.slug }}");
    expect(steps("work").some((s) => typeof s.run === "string" && s.run.includes('git switch -c "$BRANCH"'))).toBe(true);
    const push = steps("work").find((s) => typeof s.run === "string" && s.run.includes("gh pr create"))!;
    expect(push.if).toBe("steps.loop.outputs.outcome == 'complete'");
    expect(push.run).toContain("':(exclude).phaseloop'");
  });

  it("uses the action with inputs it declares, in both jobs", () => {
    const inputs = Object.keys(action.inputs as Yaml);
    const uses = Object.keys(jobs).flatMap((job) => steps(job).filter(isAction).map((s) => ({ job, step: s })));
    expect(uses.map((u) => u.job)).toEqual(["plan", "work"]);
    for (const { step } of uses) for (const key of Object.keys((step.with as Yaml | undefined) ?? {})) expect(inputs).toContain(key);
    const loop = uses[1]!.step;
    expect(loop.id).toBe("loop");
    expect(loop.with).toMatchObject({ pipeline: "${{ env.PIPELINE }}", task: "${{ matrix.task.id }}" });
    // the outputs the workflow reads are the action's
    const read = [...readFileSync(join(ROOT, FILE), "utf8").matchAll(/steps\.loop\.outputs\.(\w+)/g)].map((m) => m[1]!);
    for (const name of read) expect(Object.keys(action.outputs as Yaml)).toContain(name);
  });

  it("runs phaseloop commands that exist, with options they take, and reads matrix fields tasks --json gives", () => {
    const dir = generatorEvaluatorRepo();
    const vars = { PIPELINE: env.PIPELINE!, GITHUB_OUTPUT: join(dir, "out"), GITHUB_STEP_SUMMARY: join(dir, "summary") };
    const commands = Object.keys(jobs).flatMap((job) => steps(job).flatMap((s) => (typeof s.run === "string" ? phaseloopCommands(s.run, vars) : [])));
    expect(commands.map((c) => c.slice(0, 1))).toEqual([["tasks"], ["tasks"]]);
    let matrix: Record<string, unknown>[] = [];
    for (const argv of commands) {
      const r = cli(argv, dir);
      expect(r.stderr).toBe("");
      expect(r.code, argv.join(" ")).toBe(0);
      if (argv.includes("--json")) matrix = JSON.parse(r.stdout) as Record<string, unknown>[];
    }
    expect(matrix.map((t) => t.id)).toEqual(["US-001", "US-003"]);
    const fields = new Set([...readFileSync(join(ROOT, FILE), "utf8").matchAll(/matrix\.task\.(\w+)/g)].map((m) => m[1]!));
    expect([...fields].sort()).toEqual(["id", "slug", "title"]);
    for (const task of matrix) for (const field of fields) expect(task).toHaveProperty(field);

    // the run the action makes of each matrix entry
    const loop = steps("work").find(isAction)!;
    for (const task of matrix) {
      const known = { "env.PIPELINE": env.PIPELINE!, "matrix.task.id": String(task.id), "matrix.task.slug": String(task.slug) };
      const w = loop.with as Record<string, string>;
      const argv = ["run", substitute(w.pipeline!, known), "--task", substitute(w.task!, known), ...actionArgs(substitute(w.args!, known))];
      expect(argv).toContain("--reporter");
      // the job installs the agent's CLI first; a stand-in here
      const r = cli([...argv, "--dry-run"], dir, { PATH: `${fakeClaude()}:${process.env.PATH ?? "/usr/bin:/bin"}` });
      expect(r.code, `${argv.join(" ")}\n${r.stderr}`).toBe(0);
      expect(r.stdout).toContain("claude -p --permission-mode acceptEdits");
    }
  });
});
