/**
 * plan-execute-review and generator-evaluator as a user meets them: the
 * defaults (sandbox: auto, so the OS sandbox runs where the machine has one),
 * a git repository with a .gitignore, `phaseloop run pipelines/RECIPE.yaml`.
 * Their read-only and evaluating phases may write the run's artifacts folder,
 * the one place under .phaseloop/ the sandbox lets a phase write, and the
 * recipes run to the end.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { cli, ensureBuilt, events, git, ROOT, runDir, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

function repo(files: Record<string, string>): string {
  const dir = tempDir("phaseloop-recipe-defaults-");
  write(dir, { ".gitignore": "node_modules/\n.phaseloop/\n*.log\n", ...files });
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "base");
  return dir;
}

/** A stand-in agent for every role: `case $PHASELOOP_PHASE in …`. */
const agent = (cases: Record<string, string>) => `case "$PHASELOOP_PHASE" in ${Object.entries(cases).map(([phase, script]) => `${phase}) ${script} ;;`).join(" ")} esac`;
const run = (dir: string, recipe: string, ...params: string[]) => cli(["run", join(ROOT, "pipelines", `${recipe}.yaml`), "--reporter", "plain", ...params.flatMap((p) => ["--param", p])], dir);
const finished = (dir: string) => events(dir).at(-1) as { outcome: string; reason: { code: string; message: string } };
/** Where the machine has an OS sandbox, every agent phase ran in it. */
const sandboxed = (dir: string) => {
  const agentPhases = events(dir).filter((e) => e.type === "phase.started" && e.kind !== "run");
  expect(agentPhases.length).toBeGreaterThan(0);
  for (const e of agentPhases) expect(e.sandbox, String(e.phase)).toBe(probeSandbox().available);
};
const artifacts = (dir: string) => readdirSync(join(runDir(dir), "artifacts")).sort();

describe("recipes under the defaults, in a git repository with a .gitignore", { timeout: 120_000 }, () => {
  it("plan-execute-review: the read-only phases keep their notes in the artifacts folder and the reviewer's verdict completes the run", () => {
    const dir = repo({ "README.md": "a project\n" });
    const note = (name: string) => `echo "$PHASELOOP_PHASE notes" > "$PHASELOOP_ARTIFACTS/${name}.md"`;
    const r = run(
      dir,
      "plan-execute-review",
      `agent=${agent({
        interpret: `${note("interpretation")}; echo "Write work.txt."`,
        plan: `${note("plan")}; printf 'PLAN:\\n- write work.txt\\n'`,
        execute: "echo step >> work.txt; echo done",
        review: `${note("review")}; echo '<verdict>READY_TO_DEPLOY</verdict>'`,
      })}`,
      "goal=write work.txt",
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(finished(dir)).toMatchObject({ outcome: "complete" });
    expect(readFileSync(join(dir, "work.txt"), "utf8")).toBe("step\n");
    expect(artifacts(dir)).toEqual(["interpretation.md", "plan.md", "review.md"]);
    sandboxed(dir);
    const phases = events(dir).filter((e) => e.type === "phase.finished");
    expect(phases.map((e) => [e.phase, e.status])).toEqual([["interpret", "succeeded"], ["plan", "succeeded"], ["execute", "succeeded"], ["review", "succeeded"]]);
  });

  it("generator-evaluator: the evaluator writes .loop/ and the artifacts folder, the verdicts are written back and logged", () => {
    const prd = { userStories: [{ id: "US-001", title: "First", priority: 1, passes: false, description: "one" }] };
    const dir = repo({ ".loop/prd.json": JSON.stringify(prd, null, 2) });
    const r = run(
      dir,
      "generator-evaluator",
      `agent=${agent({
        generate: "echo line >> work.txt; echo generated",
        evaluate: `echo "checked work.txt" > "$PHASELOOP_ARTIFACTS/evaluation.md"; echo '<verdict>PASS</verdict>'`,
      })}`,
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(finished(dir)).toMatchObject({ outcome: "complete" });
    expect(JSON.parse(readFileSync(join(dir, ".loop/prd.json"), "utf8")).userStories[0]).toMatchObject({ id: "US-001", passes: true });
    expect(readFileSync(join(dir, ".loop/progress.md"), "utf8")).toMatch(/### US-001 — First\nIteration: 1\nVerdict: PASS/);
    expect(artifacts(dir)).toEqual(["evaluation.md"]);
    sandboxed(dir);
    expect(existsSync(join(dir, "work.txt"))).toBe(true);
  });

  it("no recipe's tool set names a write glob under .phaseloop/, which the OS sandbox keeps read-only", () => {
    for (const file of readdirSync(join(ROOT, "pipelines")).filter((f) => f.endsWith(".yaml"))) {
      const writes = readFileSync(join(ROOT, "pipelines", file), "utf8")
        .split("\n")
        .filter((l) => !l.trimStart().startsWith("#"))
        .flatMap((l) => [...l.matchAll(/write: \[([^\]]*)\]/g)].map((m) => m[1]!));
      expect(writes.filter((w) => w.includes(".phaseloop")), file).toEqual([]);
    }
  });
});
