import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, git, tempDir, write } from "../cli/cli-helpers.ts";

const dirs: string[] = [];
beforeAll(() => ensureBuilt());
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function finished(d: string): { iteration: number; phase: string; changes: string[] }[] {
  const runs = join(d, ".phaseloop", "runs");
  const log = readFileSync(join(runs, readdirSync(runs)[0]!, "events.jsonl"), "utf8");
  return log
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === "phase.finished")
    .map((e) => ({ iteration: e.iteration, phase: e.phase, changes: e.changes }));
}

for (const kind of ["git", "plain"] as const) {
  describe(`changes attributed around hooks and command phases (${kind})`, () => {
    it("counts a command phase's and a before_iteration hook's writes in their iteration, never an after_iteration hook's in the next", () => {
      const d = tempDir("phaseloop-between-");
      dirs.push(d);
      write(d, { "src/a.txt": "a\n" });
      if (kind === "git") {
        git(d, "init", "-q");
        git(d, "add", "-A");
        git(d, "commit", "-qm", "init");
      }
      writeFileSync(
        join(d, "loop.yaml"),
        [
          "phaseloop: 1",
          "name: between",
          "hooks:",
          "  before_iteration: ['sh', '-c', 'test $PHASELOOP_ITERATION = 2 && echo b > before.txt || true']",
          "  after_iteration: ['sh', '-c', 'echo $PHASELOOP_ITERATION > after.txt']",
          "phases:",
          "  work:",
          "    run: ['sh', '-c', 'test $PHASELOOP_ITERATION = 1 && echo w >> src/a.txt || true']",
          "  check:",
          "    run: ['true']",
          "    next:",
          "      - if: iteration > 99",
          "        stop: complete",
          "      - goto: work",
          "stop: { max_iterations: 5, no_progress: 2 }",
          "",
        ].join("\n"),
      );
      const r = cli(["run", "loop.yaml", "--reporter", "plain"], d);
      expect(r.code, r.stdout + r.stderr).not.toBe(2); // it ran; it stopped for no progress after iteration 4
      // iteration 1: the command phase's write; 2: the before_iteration hook's (the iteration had begun); 3, 4: none,
      // although after_iteration rewrote after.txt before each of them
      expect(finished(d)).toEqual([
        { iteration: 1, phase: "work", changes: ["src/a.txt"] },
        { iteration: 1, phase: "check", changes: ["src/a.txt"] },
        { iteration: 2, phase: "work", changes: ["before.txt"] },
        { iteration: 2, phase: "check", changes: ["before.txt"] },
        { iteration: 3, phase: "work", changes: [] },
        { iteration: 3, phase: "check", changes: [] },
        { iteration: 4, phase: "work", changes: [] },
        { iteration: 4, phase: "check", changes: [] },
      ]);
    });
  });
}
