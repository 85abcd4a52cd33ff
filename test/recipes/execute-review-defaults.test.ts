/**
 * execute-review as a user meets it: the defaults (sandbox: auto, so the OS
 * sandbox runs where the machine has one), a git repository with a
 * .gitignore, `phaseloop run pipelines/execute-review.yaml`. The reviewer's
 * verdict goes to the run's artifacts folder, which the sandbox lets a phase
 * write: a blocker stops the run, and a reviewer that crashes without a
 * verdict never lets it complete.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, events, git, ROOT, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

/** A stand-in agent for both roles (PHASELOOP_PHASE says which), writing nothing under .phaseloop/ but the verdict. */
const agent = (review: string) => `if [ "$PHASELOOP_PHASE" = review ]; then ${review}; else echo step >> work.txt; echo "STATUS: INCOMPLETE"; fi`;
const verdict = (blocker: string) => `printf 'loop = 1\\nsummary = "checked"\\nblocker = "${blocker}"\\n' > "$PHASELOOP_ARTIFACTS/review_output.toml"`;

function repo(): string {
  const dir = tempDir("phaseloop-er-");
  write(dir, { ".gitignore": "node_modules/\n.phaseloop/\n*.log\n", "TASK.md": "Write work.txt.\n" });
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "base");
  return dir;
}

const run = (dir: string, review: string) => cli(["run", join(ROOT, "pipelines/execute-review.yaml"), "--reporter", "plain", "--param", `agent=${agent(review)}`], dir);
const finished = (dir: string) => events(dir).at(-1) as { outcome: string; reason: { code: string; message: string } };

describe("execute-review under the defaults", { timeout: 120_000 }, () => {
  it("reads the review: a blocker stops the run blocked with the reviewer's words", () => {
    const dir = repo();
    const r = run(dir, verdict("needs an API key"));
    expect(r.code, r.stdout + r.stderr).toBe(3);
    expect(finished(dir)).toMatchObject({ outcome: "blocked", reason: { message: "review: needs an API key" } });
    const review = events(dir).find((e) => e.type === "phase.finished" && e.phase === "review") as { status: string; output: { review: { blocker: string } } };
    expect(review).toMatchObject({ status: "succeeded", output: { review: { blocker: "needs an API key" } } });
  });

  it("a review with nothing pending goes on to the check, which completes the run", () => {
    const dir = repo();
    const r = run(dir, verdict(""));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(finished(dir).outcome).toBe("complete");
  });

  it("a reviewer that exits 1 without a verdict does not complete the run, though the check is `true`", () => {
    const dir = repo();
    const r = run(dir, "echo 'reviewer crashed' >&2; exit 1");
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(finished(dir)).toMatchObject({ outcome: "failed", reason: { code: "unhandled_failure" } });
    expect(finished(dir).reason.message).toMatch(/phase "review" failed/);
  });

  it("validate and --dry-run flag the old review path under .phaseloop/, located, with the way out", () => {
    const dir = repo();
    const old = readFileSync(join(ROOT, "pipelines/execute-review.yaml"), "utf8").replace('"{{ run.artifacts }}/review_output.toml"', ".phaseloop/review_output.toml");
    write(dir, { "old.yaml": old.replaceAll("execute-review/", `${join(ROOT, "pipelines/execute-review")}/`) });
    const line = old.split("\n").findIndex((l) => l.includes(".phaseloop/review_output.toml")) + 1;
    for (const args of [["validate", "old.yaml"], ["run", "old.yaml", "--dry-run"]]) {
      const r = cli(args, dir);
      expect(r.stderr, args.join(" ")).toMatch(new RegExp(`old\\.yaml:${line}:\\d+: warning OUTPUT_FILE_UNWRITABLE`));
      expect(r.stderr).toContain('{{ run.artifacts }}/review_output.toml');
    }
    expect(cli(["validate", join(ROOT, "pipelines/execute-review.yaml")], dir).stderr).not.toContain("OUTPUT_FILE_UNWRITABLE");
  });
});
