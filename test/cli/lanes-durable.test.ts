import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { findRunProcesses } from "../../src/host/orphans.ts";
import { cli, cliAsync, ensureBuilt, events, runDir } from "./cli-helpers.ts";
import { expectTidy, gitOut, laneRepo } from "./lanes-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const waitFor = async (check: () => boolean, ms = 30_000) => {
  for (let i = 0; i < ms / 25 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
};

/** Each lane's phase.finished events, by lane: a finished phase is never logged twice. */
function finishedPhases(dir: string): Map<string, string[]> {
  const lanes = join(runDir(dir), "lanes");
  const out = new Map<string, string[]>();
  for (const lane of readdirSync(lanes)) {
    const lines = readFileSync(join(lanes, lane, "events.jsonl"), "utf8").split("\n").filter(Boolean);
    const done = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.type === "phase.finished");
    out.set(lane, done.map((e) => `${String(e.iteration)}/${String(e.phase)}/${String(e.attempt)}`));
  }
  return out;
}

function expectAllMerged(dir: string, ids: string[]): void {
  for (const id of ids) expect(readFileSync(join(dir, `out-${id}.txt`), "utf8")).toBe(`${id}\n`);
  expect(gitOut(dir, "branch", "--format=%(refname:short)")).toBe("main");
  for (const [lane, phases] of finishedPhases(dir)) expect(new Set(phases).size, `lane ${lane} repeated a finished phase: ${phases.join(" ")}`).toBe(phases.length);
  expectTidy(dir);
}

describe("lanes survive interrupts and crashes", () => {
  it("SIGINT stops every lane with exit 130, leaves no process, and resume finishes every lane", async () => {
    const ids = ["a", "b", "c", "d"];
    const dir = laneRepo(Object.fromEntries(ids.map((id) => [id, {}])), 2, "3");
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await waitFor(() => (run.output().match(/execute started/g) ?? []).length >= 2);
    process.kill(run.child.pid!, "SIGINT");
    const r = await run.done;
    expect(r.code).toBe(130);
    const runId = runDir(dir).split("/").at(-1)!;
    expect(findRunProcesses(runId)).toEqual([]);
    const status = cli(["status"], dir);
    expect(status.stdout).toMatch(/interrupted/);
    expect(status.stdout).toMatch(/a: running/);
    const ev = events(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.interrupted" });
    expect(ev.filter((e) => e.type === "lane.interrupted").map((e) => e.task).sort()).toEqual(["a", "b"]);
    const resumed = cli(["resume", "--reporter", "plain"], dir);
    expect(resumed.code).toBe(0);
    expectAllMerged(dir, ids);
  }, 120_000);

  it("SIGKILL at any moment, then resume: no finished phase lost or repeated, no worktree or process left", async () => {
    const ids = ["a", "b", "c", "d", "e"];
    const dir = laneRepo(Object.fromEntries(ids.map((id) => [id, {}])), 3, "0.4");
    // killed a few times at different moments, the run and its resumes
    let args = ["run", "p.yaml", "--reporter", "plain"];
    for (const delay of [1500, 1300, 600, 2000, 900]) {
      const run = cliAsync(args, dir);
      await new Promise((r) => setTimeout(r, delay));
      try {
        process.kill(run.child.pid!, "SIGKILL");
      } catch {
        // it ended first
      }
      const r = await run.done;
      // killed, or ended by itself: complete (a run that was near its end), never an error
      if (r.code !== null) expect(r.code, r.stdout + r.stderr).toBe(0);
      // killed before its run was set up: nothing ran, it starts again
      const started = existsSync(join(dir, ".phaseloop", "runs")) && readdirSync(join(dir, ".phaseloop", "runs")).some((n) => !n.startsWith("."));
      args = started ? ["resume", "--reporter", "plain"] : ["run", "p.yaml", "--reporter", "plain"];
    }
    const last = cli(args, dir);
    // finished now, or already (a kill after the run had ended): complete either way
    expect(last.code).toBe(0);
    expectAllMerged(dir, ids);
    const ev = events(dir);
    expect(ev.filter((e) => e.type === "lane.merged").map((e) => e.task).sort()).toEqual(ids);
  }, 180_000);
});
