import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, events, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
};
const lines = (dir: string, f: string) => readFileSync(join(dir, f), "utf8").trim().split("\n");

describe("max_visits end to end", () => {
  it("validate warns of an unbounded inner cycle, located, exit 0, and the run stops blocked at the implicit bound", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: inner
phases:
  plan: { run: "true" }
  fix:
    run: "true"
    next:
      - if: exit_code == 0
        stop: complete
      - goto: fix
stop: { max_iterations: 2 }
`,
    });
    // format 1 accepted it when first published: a located warning, and the run bounds the cycle
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/p\.yaml:10:15: warning UNBOUNDED_CYCLE the cycle "fix" → "fix"/);
    // a cycle that never ends on its own: the run's bound ends it
    write(dir, { "loop.yaml": "phaseloop: 1\nname: inner\nphases:\n  plan: { run: \"true\" }\n  fix:\n    run: \"true\"\n    next:\n      - if: iteration > 5\n        stop: complete\n      - goto: fix\nstop: { max_iterations: 2 }\n" });
    const run = cli(["run", "loop.yaml", "--reporter", "plain"], dir);
    expect(run.code).toBe(3);
    expect(run.stdout + run.stderr).toMatch(/phase "fix" ran 10 times in one iteration/);
  });

  it("a bounded cycle ends on its exhausted rule: goto, then stop blocked with its reason, exit 3", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: bounded
phases:
  plan: { run: "true" }
  implement:
    run: "echo implement >> log.txt"
    max_visits: 3
    exhausted: { goto: test }
    next: implement
  test:
    run: "echo test >> log.txt; exit 1"
    max_visits: 2
    exhausted: { stop: blocked, reason: "tests still fail after {{ phases.test.attempts }} attempt" }
    next:
      - if: exit_code == 0
        stop: complete
      - goto: fix
  fix:
    run: "echo fix >> log.txt"
    next: test
stop: { max_iterations: 3 }
`,
    });
    expect(cli(["validate", "p.yaml"], dir).code).toBe(0);
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    expect(lines(dir, "log.txt")).toEqual(["implement", "implement", "implement", "test", "fix", "test", "fix"]);
    const last = events(dir).at(-1);
    expect(last).toMatchObject({ type: "run.finished", outcome: "blocked", reason: { code: "max_visits", message: "tests still fail after 1 attempt" } });
  });

  it.skipIf(process.platform === "win32")("SIGKILL and resume keep the visit counts: the phase in flight re-runs and is not counted twice", async () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: killed
phases:
  plan: { run: "true" }
  work:
    run: [sh, -c, 'echo x >> runs.txt; n=$(wc -l < runs.txt); if [ "$n" -eq 2 ] && [ ! -f killed ]; then touch killed; sleep 30; fi']
    max_visits: 3
    exhausted: { stop: blocked, reason: "work used its visits" }
    next: work
stop: { max_iterations: 1 }
`,
    });
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await waitFor(() => existsSync(join(dir, "killed")));
    process.kill(run.child.pid!, "SIGKILL");
    await run.done;
    const state = JSON.parse(readFileSync(join(dir, ".phaseloop/runs", readFileSync(join(dir, ".phaseloop/lock"), "utf8").match(/"run_id":\s*"([^"]+)"/)![1]!, "state.json"), "utf8"));
    expect(state.snapshot.visits).toEqual({ work: 2 });
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    // visits 1, 2 (killed), 2 again on resume, 3; the fourth entry is refused
    expect(lines(dir, "runs.txt")).toHaveLength(4);
    expect(events(dir).at(-1)).toMatchObject({ type: "run.finished", outcome: "blocked", reason: { code: "max_visits", message: "work used its visits" } });
  }, 60_000);
});
