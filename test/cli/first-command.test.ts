/**
 * The README's first command, as a new user meets it: a clone of the
 * project (its own .gitignore lists hailstone.txt), the defaults (sandbox:
 * auto), `phaseloop run pipelines/hailstone.yaml` on Node and the README's
 * Deno command. The agent's file is one git ignores, and the phase's write
 * globs name it: it is the phase's work, so the run completes instead of
 * stopping on no_progress.
 */
import { spawnSync } from "node:child_process";
import { cpSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI, ensureBuilt, events, git, ROOT, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", NO_COLOR: "1" };

/** A repository laid out as a clone of the project: its .gitignore and pipelines committed, the rest linked. */
function clone(): string {
  const dir = tempDir("phaseloop-first-");
  cpSync(join(ROOT, ".gitignore"), join(dir, ".gitignore"));
  cpSync(join(ROOT, "pipelines"), join(dir, "pipelines"), { recursive: true });
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "clone");
  for (const f of ["src", "node_modules", "deno.json", "package.json"]) symlinkSync(join(ROOT, f), join(dir, f));
  return dir;
}

function finished(dir: string): { outcome: string; reason: { code: string } } {
  return events(dir).at(-1) as { outcome: string; reason: { code: string } };
}

describe("the README's first command", { timeout: 120_000 }, () => {
  it("completes on Node in a clone whose .gitignore lists the file the agent writes", () => {
    const dir = clone();
    expect(readFileSync(join(dir, ".gitignore"), "utf8")).toMatch(/^hailstone\.txt$/m);
    const r = spawnSync(process.execPath, [CLI, "run", "pipelines/hailstone.yaml"], { cwd: dir, env: ENV, encoding: "utf8", timeout: 110_000 });
    expect(r.stdout + r.stderr).toContain("run complete");
    expect(r.status).toBe(0);
    expect(finished(dir).outcome).toBe("complete");
    expect(readFileSync(join(dir, "hailstone.txt"), "utf8").trim().split("\n")).toEqual(["6", "3", "10", "5", "16", "8", "4", "2", "1"]);
    // each step's iteration measured its one change
    const ends = events(dir).filter((e) => e.type === "iteration.finished") as { changes: string[] }[];
    expect(ends.every((e) => e.changes.includes("hailstone.txt"))).toBe(true);
  });

  it.skipIf("Deno" in globalThis)("completes with the README's Deno command", () => {
    const dir = clone();
    const deno = join(ROOT, "node_modules/deno/bin.cjs");
    const r = spawnSync(process.execPath, [deno, "run", "--allow-read", "--allow-write", "--allow-env", "--allow-run", "src/cli.ts", "run", "pipelines/hailstone.yaml"], { cwd: dir, env: { ...ENV, DENO_NO_UPDATE_CHECK: "1" }, encoding: "utf8", timeout: 110_000 });
    expect(r.stdout + r.stderr).toContain("run complete");
    expect(r.status).toBe(0);
  });

  it("a file git ignores that no write glob names is not progress, and summary.md says why none was measured", () => {
    const dir = tempDir("phaseloop-first-");
    write(dir, {
      ".gitignore": "out.txt\n.phaseloop/\n",
      "p.yaml": [
        "phaseloop: 1",
        "name: ignored",
        "agents:",
        "  w: { command: [sh, -c, 'echo x >> out.txt'] }",
        "phases:",
        "  work: { agent: w, prompt: go }",
        "  check: { run: 'false', next: [{ if: exit_code == 0, stop: complete }, { goto: work }] }",
        "stop: { max_iterations: 5, no_progress: 2 }",
      ].join("\n"),
    });
    git(dir, "init", "-q");
    git(dir, "add", ".");
    git(dir, "commit", "-qm", "base");
    const r = spawnSync(process.execPath, [CLI, "run", "p.yaml", "--sandbox", "off"], { cwd: dir, env: ENV, encoding: "utf8", timeout: 60_000 });
    expect(r.status).toBe(3);
    expect(finished(dir).reason.code).toBe("no_progress");
    const summary = readFileSync(join(runDir(dir), "summary.md"), "utf8");
    expect(summary).toMatch(/a file git ignores counts only where the write globs/);
    // and names the file the run changed that git ignores
    expect(summary).toMatch(/These files changed during the run, but git ignores them[^\n]*`out\.txt`/);
  });
});
