/**
 * A fake GitHub runner: GITHUB_ACTIONS=true, and GITHUB_STEP_SUMMARY and
 * GITHUB_OUTPUT as files in the temporary directory. The real CLI speaks the
 * runner's language beside every reporter.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

/** Two iterations; the check fails in the first. */
const PIPELINE = `phaseloop: 1
name: gh-run
phases:
  work:
    run: "echo 'working: 100% done'"
  check:
    run: "test {{ iteration }} -ge 2"
    next:
      - if: exit_code == 0
        stop: complete
      - goto: work
stop: { max_iterations: 3 }
`;

const FAILING = `phaseloop: 1
name: gh-fail
phases:
  work:
    run: "echo nope; exit 4"
    next:
      - if: exit_code != 0
        stop: failed
        reason: "work exited {{ exit_code }}"
stop: { max_iterations: 1 }
`;

function runner(dir: string) {
  return { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: join(dir, "step-summary.md"), GITHUB_OUTPUT: join(dir, "github-output.txt"), GITHUB_WORKSPACE: dir };
}

/** $GITHUB_OUTPUT as the runner reads it (the last value of a name wins). */
function outputs(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = readFileSync(join(dir, "github-output.txt"), "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const heredoc = /^([^=<]+)<<(.+)$/.exec(lines[i]!);
    if (heredoc) {
      const body: string[] = [];
      for (i++; lines[i] !== heredoc[2]; i++) body.push(lines[i]!);
      out[heredoc[1]!] = body.join("\n");
    } else if (lines[i]!.includes("=")) out[lines[i]!.slice(0, lines[i]!.indexOf("="))] = lines[i]!.slice(lines[i]!.indexOf("=") + 1);
  }
  return out;
}

/** The groups in a log: their titles, and whether every group that opens closes before the next opens. */
function groups(text: string): { titles: string[]; balanced: boolean } {
  const titles: string[] = [];
  let open = false;
  let balanced = true;
  for (const line of text.split("\n")) {
    if (line.startsWith("::group::")) {
      if (open) balanced = false;
      open = true;
      titles.push(line.slice("::group::".length));
    } else if (line === "::endgroup::") {
      if (!open) balanced = false;
      open = false;
    }
  }
  return { titles, balanced: balanced && !open };
}

describe("under GitHub Actions", () => {
  it("plain lines come in a log group per iteration, a failed phase is an ::error, the summary and outputs are written", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir, runner(dir));
    expect(r.code).toBe(0);
    expect(groups(r.stdout)).toEqual({ titles: ["iteration 1", "iteration 2"], balanced: true });
    // the phase's lines are inside its iteration's group
    const first = r.stdout.slice(r.stdout.indexOf("::group::iteration 1"), r.stdout.indexOf("::endgroup::"));
    expect(first).toContain("check failed");
    expect(r.stdout).toContain("::error title=phaseloop%3A phase check failed::iteration 1, phase check failed (exit_nonzero: exit code 1)\n");
    const out = outputs(dir);
    expect(out).toMatchObject({ outcome: "complete", exit_code: "0", run_dir: runDir(dir) });
    expect(runDir(dir).endsWith(out.run_id!)).toBe(true);
    const summary = readFileSync(join(dir, "step-summary.md"), "utf8");
    expect(summary).toContain(readFileSync(join(runDir(dir), "summary.md"), "utf8").trimEnd());
    expect(summary).toContain(`# gh-run · run ${out.run_id}`);
  });

  it("--reporter json keeps stdout pure NDJSON: the commands go to stderr", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE });
    const r = cli(["run", "p.yaml", "--reporter", "json"], dir, runner(dir));
    expect(r.code).toBe(0);
    for (const line of r.stdout.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow();
    expect(groups(r.stderr)).toEqual({ titles: ["iteration 1", "iteration 2"], balanced: true });
    expect(r.stderr).toContain("::error title=phaseloop%3A phase check failed::");
    expect(outputs(dir)).toMatchObject({ outcome: "complete", exit_code: "0" });
    expect(readFileSync(join(dir, "step-summary.md"), "utf8")).toContain("# gh-run · run ");
  });

  it("--reporter tty also writes the groups, the summary and the outputs", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE });
    const r = cli(["run", "p.yaml", "--reporter", "tty"], dir, runner(dir));
    expect(r.code).toBe(0);
    expect(groups(r.stdout)).toEqual({ titles: ["iteration 1", "iteration 2"], balanced: true });
    expect(outputs(dir)).toMatchObject({ outcome: "complete" });
    expect(readFileSync(join(dir, "step-summary.md"), "utf8")).toContain("# gh-run · run ");
  });

  it("a failed run is an ::error with its reason; outcome failed, exit code 1", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": FAILING });
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir, runner(dir));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^::error title=phaseloop%3A run failed::run \S+ failed: work exited 4$/m);
    expect(outputs(dir)).toMatchObject({ outcome: "failed", exit_code: "1" });
    expect(readFileSync(join(dir, "step-summary.md"), "utf8")).toContain("failed");
  });

  it("an invalid pipeline is annotated at its file, line and column, by validate and by run; run says outcome invalid", () => {
    const dir = tempDir();
    write(dir, { "pipes/bad.yaml": PIPELINE.replace("name: gh-run", "name: Bad Name") });
    const v = cli(["validate", "pipes/bad.yaml"], dir, runner(dir));
    expect(v.code).toBe(2);
    expect(v.stderr).toContain('::error file=pipes/bad.yaml,line=2,col=7,endLine=2,endColumn=15,title=SCHEMA_PATTERN::the pipeline name "Bad Name" is not kebab-case');
    const r = cli(["run", "pipes/bad.yaml", "--reporter", "plain"], dir, runner(dir));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("::error file=pipes/bad.yaml,line=2,col=7,");
    expect(outputs(dir)).toEqual({ outcome: "invalid", exit_code: "2" });
    expect(existsSync(join(dir, "step-summary.md"))).toBe(false);
  });

  it("a refused --task is an ::error with the reason", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1\nname: q\ntasks: { source: { glob: "tasks/*.md" } }\nphases:\n  a: { run: "true", next: [{ task: done, goto: a }] }\nstop: { max_iterations: 2 }\n`,
      "tasks/alpha.md": "# Alpha\n",
    });
    const r = cli(["run", "p.yaml", "--task", "alpah"], dir, runner(dir));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('::error title=phaseloop::no task "alpah" in the queue (1 task); did you mean "alpha"?');
    expect(outputs(dir)).toEqual({ outcome: "invalid", exit_code: "2" });
  });

  it("outside GitHub Actions nothing of this is written", () => {
    const dir = tempDir();
    write(dir, { "p.yaml": PIPELINE, "bad.yaml": "phaseloop: 1\nname: Bad Name\n" });
    const { GITHUB_STEP_SUMMARY, GITHUB_OUTPUT } = runner(dir);
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir, { GITHUB_STEP_SUMMARY, GITHUB_OUTPUT });
    expect(r.code).toBe(0);
    const v = cli(["validate", "bad.yaml"], dir, { GITHUB_STEP_SUMMARY, GITHUB_OUTPUT });
    expect(r.stdout + r.stderr + v.stdout + v.stderr).not.toMatch(/^::/m);
    expect(existsSync(GITHUB_OUTPUT)).toBe(false);
    expect(existsSync(GITHUB_STEP_SUMMARY)).toBe(false);
  });
});
