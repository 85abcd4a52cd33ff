/**
 * phaseloop's own output is not a phase's work: `phaseloop run p.yaml >
 * run.out` and `| tee FILE` into the workdir, under the defaults (sandbox:
 * auto) in a git repository with a .gitignore, neither fail the run as a
 * change outside the write scope nor count as progress. A hard link to the
 * log, made by a phase, is measured all the same.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI, ensureBuilt, events, git, ROOT, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" };

const PIPELINE = (agent: string) =>
  [
    "phaseloop: 1",
    "name: own-output",
    "agents:",
    `  w: { command: [sh, -c, ${JSON.stringify(agent)}] }`,
    "tools:",
    "  t: { read: ['**'], write: ['src/**'] }",
    "phases:",
    "  work: { agent: w, prompt: go, tools: t }",
    "  check:",
    "    run: 'test \"$(cat src/n)\" -ge 3'",
    "    next: [{ if: exit_code == 0, stop: complete }, { goto: work }]",
    "stop: { max_iterations: 6, no_progress: 1 }",
    "",
  ].join("\n");

/** Counts to 3 in src/n, one step an iteration. */
const COUNTER = 'mkdir -p src; n=$(cat src/n 2>/dev/null || echo 0); echo $((n+1)) > src/n; echo "step $n"';

function repo(agent = COUNTER): string {
  const dir = tempDir("phaseloop-own-");
  write(dir, { ".gitignore": "node_modules/\n.phaseloop/\n*.log\n", "p.yaml": PIPELINE(agent), "README.md": "x\n", "src/.keep": "" });
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "base");
  return dir;
}

/** The command line a user types, through sh. */
function shell(dir: string, line: string): { status: number | null; out: string } {
  // the built CLI, run by the runtime running this test (Deno runs a script with `run -A`)
  const phaseloop = "Deno" in globalThis ? `${process.execPath} run -A ${CLI}` : `${process.execPath} ${CLI}`;
  const r = spawnSync("sh", ["-c", line], { cwd: dir, env: { ...ENV, PHASELOOP: phaseloop }, encoding: "utf8", timeout: 110_000 });
  return { status: r.status, out: r.stdout + r.stderr };
}

const outcome = (dir: string) => events(dir).at(-1) as { outcome: string; reason: { message: string } };
const violations = (dir: string) => events(dir).filter((e) => e.type === "policy.violation") as { paths: string[] }[];

describe("phaseloop's own output in the workdir", { timeout: 120_000 }, () => {
  it("`phaseloop run p.yaml > run.out` completes, and run.out is nobody's change", () => {
    const dir = repo();
    const r = shell(dir, '$PHASELOOP run p.yaml > run.out 2>&1; echo "exit $?" > exit.txt');
    expect(readFileSync(join(dir, "exit.txt"), "utf8").trim(), r.out).toBe("exit 0");
    expect(readFileSync(join(dir, "run.out"), "utf8")).toContain("run complete");
    expect(violations(dir)).toEqual([]);
    const changed = (events(dir).filter((e) => e.type === "iteration.finished") as { changes: string[] }[]).map((e) => e.changes);
    expect(changed).toEqual([["src/n"], ["src/n"], ["src/n"]]);
  });

  it("`| tee run-output.txt` into a path git does not ignore completes, as does `| tee run.log` into one it does", () => {
    for (const file of ["run-output.txt", "run.log"]) {
      const dir = repo();
      const r = shell(dir, `$PHASELOOP run p.yaml 2>&1 | tee ${file} >/dev/null`);
      expect(r.status, r.out).toBe(0);
      expect(outcome(dir).outcome).toBe("complete");
      expect(readFileSync(join(dir, file), "utf8")).toContain("run complete");
      expect(violations(dir)).toEqual([]);
    }
  });

  it.skipIf("Deno" in globalThis)("`| tee` completes with the README's Deno command too (its permissions do not reach /proc)", () => {
    const dir = repo();
    const deno = `${process.execPath} ${join(ROOT, "node_modules/deno/bin.cjs")} run --allow-read --allow-write --allow-env --allow-run ${join(ROOT, "src/cli.ts")}`;
    const r = shell(dir, `${deno} run p.yaml 2>&1 | tee run-output.txt >/dev/null`);
    expect(r.status, r.out).toBe(0);
    expect(outcome(dir).outcome).toBe("complete");
    expect(violations(dir)).toEqual([]);
  });

  it("with no work done, the log does not pass for progress", () => {
    const dir = repo('echo "nothing done"');
    shell(dir, "$PHASELOOP run p.yaml > run.out 2>&1");
    expect(outcome(dir).reason.message).toMatch(/no file changed/);
  });

  it("a hard link a phase makes to the log, outside its write globs, is measured", () => {
    const dir = repo(`${COUNTER}; ln -f run.out notes.txt 2>/dev/null || true`);
    shell(dir, "$PHASELOOP run p.yaml --sandbox off > run.out 2>&1");
    expect(violations(dir).flatMap((v) => v.paths)).toContain("notes.txt");
    expect(outcome(dir).outcome).not.toBe("complete");
  });

  it("leaving the run's own output out leaves the repository's own files in: a hook a phase writes is still outside every write scope", () => {
    const dir = repo(`${COUNTER}; printf '#!/bin/sh\\n' > .git/hooks/pre-commit`);
    shell(dir, "$PHASELOOP run p.yaml --sandbox off > run.out 2>&1");
    expect(violations(dir).flatMap((v) => v.paths)).toContain(".git/hooks/pre-commit");
    const work = events(dir).find((e) => e.type === "phase.finished" && e.phase === "work");
    expect(work).toMatchObject({ status: "failed", error: "policy_violation" });
  });
});
