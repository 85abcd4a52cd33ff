/**
 * action.yml: a composite action whose structure holds together (inputs and
 * step outputs it refers to exist), and whose own scripts work: the install
 * step builds phaseloop from a clean copy of the sources (as a workflow's
 * `uses:` checks them out, without dist/ or node_modules) and puts it on PATH,
 * and the run step runs a pipeline with the inputs and leaves the outputs.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI, ensureBuilt, ROOT, tempDir, write } from "../cli/cli-helpers.ts";
import { readYaml, type Yaml } from "./ci-helpers.ts";
import { skipped } from "../skip-reason.ts";

const action = readYaml("action.yml");
const runs = action.runs as Yaml;
const steps = runs.steps as Yaml[];
const text = readFileSync(join(ROOT, "action.yml"), "utf8");
const named = (name: string) => steps.find((s) => s.name === name)!;

beforeAll(() => ensureBuilt(), 120_000);

/** How the runner starts a `shell: bash` step (its script as a file; here with -c). */
const BASH = ["--noprofile", "--norc", "-eo", "pipefail", "-c"];

describe("action.yml", () => {
  it("is a composite action: set up Node, install phaseloop, run the pipeline, upload the run folder", () => {
    expect(runs.using).toBe("composite");
    expect(steps.map((s) => s.uses ?? s.name)).toEqual(["actions/setup-node@v4", "Install phaseloop", "Run the pipeline", "actions/upload-artifact@v4"]);
    expect(steps[0]!.with).toEqual({ "node-version": "${{ inputs.node-version }}" });
    const run = named("Run the pipeline");
    expect(run).toMatchObject({ id: "run", if: "inputs.pipeline != ''", shell: "bash", "working-directory": "${{ inputs.working-directory }}" });
    expect(run.env).toEqual({ PIPELINE: "${{ inputs.pipeline }}", TASK: "${{ inputs.task }}", ARGS: "${{ inputs.args }}" });
    const upload = steps[3]!;
    expect(upload.if).toMatch(/^always\(\) && /);
    expect(upload.with).toMatchObject({ path: "${{ steps.run.outputs.run_dir }}", "include-hidden-files": true });
  });

  it("declares every input it reads, and its outputs are the run step's", () => {
    const inputs = Object.keys(action.inputs as Yaml);
    expect(inputs).toEqual(expect.arrayContaining(["pipeline", "task", "args", "working-directory", "node-version", "phaseloop-version", "upload-artifact", "artifact-name"]));
    for (const m of text.matchAll(/inputs\.([\w-]+)/g)) expect(inputs).toContain(m[1]);
    const ids = steps.map((s) => s.id).filter(Boolean);
    for (const m of text.matchAll(/steps\.([\w-]+)\.outputs/g)) expect(ids).toContain(m[1]);
    const outputs = action.outputs as Record<string, { value: string }>;
    expect(Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, v.value]))).toEqual({
      outcome: "${{ steps.run.outputs.outcome }}",
      run_id: "${{ steps.run.outputs.run_id }}",
      exit_code: "${{ steps.run.outputs.exit_code }}",
      run_dir: "${{ steps.run.outputs.run_dir }}",
    });
    // expressions stay out of the scripts: values reach them through env
    for (const s of steps) if (typeof s.run === "string") expect(s.run).not.toContain("${{");
  });

  it("runs the pipeline with the inputs: the task, args as shell words, the outputs for the steps after it", () => {
    const runner = tempDir("phaseloop-runner-");
    // phaseloop on PATH, as the install step leaves it
    write(runner, { "bin/phaseloop.sh": `#!/bin/sh\nexec node "${CLI}" "$@"\n` });
    spawnSync("mv", [join(runner, "bin/phaseloop.sh"), join(runner, "bin/phaseloop")]);
    const work = queueRepo();
    const output = join(runner, "output");
    const env = { PATH: `${join(runner, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: process.env.HOME ?? "/tmp", GITHUB_ACTIONS: "true", GITHUB_OUTPUT: output, GITHUB_STEP_SUMMARY: join(runner, "summary"), CI: "true" };
    const script = named("Run the pipeline").run as string;
    const run = spawnSync("bash", [...BASH, script], { stdio: ["ignore", "pipe", "pipe"], cwd: work, env: { ...env, PIPELINE: "p.yaml", TASK: "b", ARGS: `--param 'greeting=hello, "world"' --sandbox off` }, encoding: "utf8" });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(readFileSync(join(work, "done-b.txt"), "utf8")).toBe('hello, "world"\n');
    expect(existsSync(join(work, "done-a.txt"))).toBe(false);
    expect(run.stdout).toContain("::group::iteration 1 · task b");
    const out = readFileSync(output, "utf8");
    expect(out).toMatch(/^outcome=complete$/m);
    expect(out).toMatch(new RegExp(`^run_dir=${work.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/\\.phaseloop/runs/\\d{8}-\\d{6}-\\w+$`, "m"));
    expect(readFileSync(join(runner, "summary"), "utf8")).toContain("# action-check · run ");

    const bad = spawnSync("bash", [...BASH, script], { stdio: ["ignore", "pipe", "pipe"], cwd: work, env: { ...env, PIPELINE: "p.yaml", TASK: "", ARGS: "--param 'unmatched" }, encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stdout).toContain("::error title=phaseloop::the args input cannot be split into words");
    const blank = spawnSync("bash", [...BASH, script], { stdio: ["ignore", "pipe", "pipe"], cwd: work, env: { ...env, PIPELINE: "p.yaml", TASK: "a", ARGS: "   " }, encoding: "utf8" });
    expect(blank.status, blank.stderr).toBe(0);
  });

  // npm ci of the whole tree and a build: a minute or more, so in CI (CI=true) or when asked
  // (PHASELOOP_TEST_ACTION_INSTALL=1), on Node (the action's steps run on Node)
  const installToo = (process.env.CI === "true" || process.env.PHASELOOP_TEST_ACTION_INSTALL === "1") && !("Deno" in globalThis);
  it.skipIf(skipped(!installToo, "installing from a clean copy runs under CI=true (or PHASELOOP_TEST_ACTION_INSTALL=1) on Node only"))(
    "installs phaseloop from a clean copy of its sources (no dist/, no node_modules) and puts it on PATH",
    () => {
      const actionPath = tempDir("phaseloop-action-");
      const copy = spawnSync("sh", ["-c", `git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "${actionPath}"`], { cwd: ROOT });
      expect(copy.status).toBe(0);
      expect(existsSync(join(actionPath, "dist"))).toBe(false);
      const runner = tempDir("phaseloop-runner-");
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", RUNNER_TEMP: runner, GITHUB_PATH: join(runner, "path"), npm_config_prefer_offline: "true" };
      const install = spawnSync("bash", [...BASH, named("Install phaseloop").run as string], { stdio: ["ignore", "pipe", "pipe"], env: { ...env, PHASELOOP_SOURCE: "action", ACTION_PATH: actionPath }, encoding: "utf8" });
      expect(install.status, install.stdout + install.stderr).toBe(0);
      expect(install.stdout).toMatch(/^phaseloop \d+\.\d+\.\d+ is on PATH$/m);
      const bin = readFileSync(join(runner, "path"), "utf8").trim();
      const work = queueRepo();
      const run = spawnSync("phaseloop", ["run", "p.yaml", "--task", "a", "--sandbox", "off", "--reporter", "plain"], { cwd: work, env: { ...env, PATH: `${bin}:${env.PATH}` }, encoding: "utf8" });
      expect(run.status, run.stdout + run.stderr).toBe(0);
      expect(readFileSync(join(work, "done-a.txt"), "utf8")).toBe("hi\n");
    },
    600_000,
  );
});

/** A queue of two independent tasks; the phase writes done-ID.txt with the greeting param. */
function queueRepo(): string {
  const work = tempDir();
  write(work, {
    "p.yaml": `phaseloop: 1
name: action-check
params:
  greeting: { type: string, default: hi }
tasks: { source: { glob: "tasks/*.md" } }
phases:
  work:
    run: [sh, -c, 'printf "%s\\n" "$0" > "done-$1.txt"', "{{ params.greeting }}", "{{ task.id }}"]
    next:
      - task: done
        goto: work
stop: { max_iterations: 3 }
`,
    "tasks/a.md": "# A\n",
    "tasks/b.md": "# B\n",
  });
  return work;
}
