/**
 * `resume --force` with a checkpoint that cannot be used rebuilds it from the
 * event log: parallel groups (finished members are not run again), visit
 * counts, and answers to questions come back as the log tells them.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, events, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
};
const lines = (dir: string, f: string) => readFileSync(join(dir, f), "utf8").trim().split("\n");

/** Kill phaseloop at once, then make its checkpoint unusable: only the log is left to go by. */
async function killAndLoseCheckpoint(run: ReturnType<typeof cliAsync>, dir: string, logged: (text: string) => boolean): Promise<void> {
  await waitFor(() => existsSync(join(runDir(dir), "events.jsonl")) && logged(readFileSync(join(runDir(dir), "events.jsonl"), "utf8")));
  process.kill(run.child.pid!, "SIGKILL");
  await run.done;
  rmSync(join(runDir(dir), "state.json"), { force: true });
  rmSync(join(runDir(dir), "state.json.next"), { force: true });
}

describe.skipIf(process.platform === "win32")("resume --force rebuilds control flow from the log", () => {
  it("a parallel group: members the log saw end are not run again", async () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: group-rebuilt
phases:
  plan: { run: "echo plan >> ran.txt" }
  reviews:
    parallel: [fast, slow]
    next: [{ if: "status == 'succeeded'", stop: complete }, { stop: failed }]
  fast: { run: "echo fast >> ran.txt" }
  slow: { run: "if [ ! -f slept ]; then touch slept; sleep 30; fi; echo slow >> ran.txt" }
stop: { max_iterations: 1 }
`,
    });
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await killAndLoseCheckpoint(run, dir, (t) => existsSync(join(dir, "slept")) && /"type":"phase.finished"[^\n]*"phase":"fast"/.test(t));
    const r = cli(["resume", "--force", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(lines(dir, "ran.txt")).toEqual(["plan", "fast", "slow"]);
    const ev = events(dir);
    expect(ev.filter((e) => e.type === "phase.started" && e.phase === "fast")).toHaveLength(1);
    expect(ev.filter((e) => e.type === "phase.finished" && e.phase === "reviews")).toEqual([expect.objectContaining({ status: "succeeded", join: "all_success" })]);
    expect(ev.some((e) => e.type === "note" && /rebuilt from events\.jsonl/.test(String(e.message)) && !/did not replay/.test(String(e.message)))).toBe(true);
  }, 90_000);

  it("visit counts: a phase that used its visits before the crash is not given more", async () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: visits-rebuilt
phases:
  plan: { run: "true" }
  work:
    run: [sh, -c, 'echo x >> runs.txt; n=$(wc -l < runs.txt); if [ "$n" -eq 3 ] && [ ! -f killed ]; then touch killed; sleep 30; fi']
    max_visits: 3
    exhausted: { stop: blocked, reason: "work used its visits" }
    next: work
stop: { max_iterations: 1 }
`,
    });
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await killAndLoseCheckpoint(run, dir, () => existsSync(join(dir, "killed")));
    const r = cli(["resume", "--force", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    // visits 1 and 2 from the log, 3 killed and run again; a fourth entry is refused
    expect(lines(dir, "runs.txt")).toHaveLength(4);
    expect(events(dir).at(-1)).toMatchObject({ type: "run.finished", outcome: "blocked", reason: { code: "max_visits", message: "work used its visits" } });
  }, 90_000);

  it("a question answered before the crash keeps its answer; one not yet answered is asked again", async () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: answer-rebuilt
phases:
  approve: { ask: "Ship it?" }
  act:
    run: 'echo {{ phases.approve.answer }} >> answer.txt; if [ ! -f killed ]; then touch killed; sleep 30; fi'
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`,
    });
    const asked = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(asked.code).toBe(3);
    rmSync(join(runDir(dir), "state.json"));
    // no answer in the log yet: the rebuilt run waits for one again
    const again = cli(["resume", "--force", "--reporter", "plain"], dir);
    expect(again.code).toBe(3);
    const run = cliAsync(["resume", "--answer", "ship", "--reporter", "plain"], dir);
    await killAndLoseCheckpoint(run, dir, () => existsSync(join(dir, "killed")));
    const r = cli(["resume", "--force", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(lines(dir, "answer.txt")).toEqual(["ship", "ship"]);
    expect(events(dir).filter((e) => e.type === "question.answered")).toHaveLength(1);
  }, 90_000);
});
