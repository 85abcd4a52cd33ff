/**
 * Every crash point holds: the run is killed at the K-th write, rename or
 * unlink (strace injects SIGKILL there), for every K; its resume is killed
 * again at another point; a last resume ends it. The log must then say each
 * thing once: one start, one finish, every phase and iteration once, seq
 * increasing, no torn line left.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ROOT, write } from "./cli-helpers.ts";
import { countCrashPoints, findStrace, logViolations, readRunFiles, runKilledAt, type Ran } from "./crash-points.ts";
import { skipped } from "../skip-reason.ts";

const strace = findStrace();

/** Two iterations of two shell phases: the shortest run with an iteration boundary. */
const SHORT = `phaseloop: 1
name: short
phases:
  change:
    run: [sh, -c, 'echo "$PHASELOOP_ITERATION" >> work.txt']
  check:
    run: [sh, -c, 'test "$(wc -l < work.txt)" -ge "$PHASELOOP_ITERATION"']
    next:
      - if: iteration >= 2
        stop: complete
      - goto: change
stop:
  max_iterations: 4
  no_progress: 3
`;

interface Case {
  name: string;
  files: Record<string, string>;
  args: string[];
  /** Checks the workdir of a run that ended complete. */
  complete: (dir: string) => string[];
}

const cases: Case[] = [
  {
    name: "a two-iteration shell pipeline",
    files: { "p.yaml": SHORT },
    // phaseloop's own state: the OS sandbox's helpers would only multiply the points (a kill of a sandboxed run is tested in test/sandbox)
    args: ["run", "p.yaml", "--reporter", "plain", "--sandbox", "off"],
    complete: (dir) => {
      const lines = readFileSync(join(dir, "work.txt"), "utf8").trim().split("\n");
      return lines.length >= 2 ? [] : [`work.txt has ${lines.length} lines`];
    },
  },
  {
    name: "hailstone from 2",
    files: {},
    args: ["run", join(ROOT, "pipelines/hailstone.yaml"), "--param", "start=2", "--reporter", "plain", "--sandbox", "off"],
    complete: (dir) => {
      const text = readFileSync(join(dir, "hailstone.txt"), "utf8");
      return text === "2\n1\n" ? [] : [`hailstone.txt is ${JSON.stringify(text)}`];
    },
  },
];

interface Outcome {
  k: number;
  k2: number;
  violations: string[];
  /** Killed before the run had a directory with run.json: nothing to resume. */
  notStarted: boolean;
}

async function crashAt(c: Case, k: number, k2: number, loseCheckpoint = false): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-crash-"));
  try {
    write(dir, c.files);
    const steps: [string, Ran][] = [];
    steps.push(["run", await runKilledAt(strace!, k, c.args, dir)]);
    const killed = readRunFiles(dir);
    if (loseCheckpoint && killed) {
      // the checkpoint is lost too: --force rebuilds it from the log
      for (const name of ["state.json", "state.json.next"]) rmSync(join(dir, ".phaseloop/runs", killed.runId, name), { force: true });
      steps.push(["resume --force", await runKilledAt(strace!, undefined, ["resume", "--force", "--reporter", "plain"], dir)]);
    }
    steps.push(["resume (killed)", await runKilledAt(strace!, k2, ["resume", "--reporter", "plain"], dir)]);
    let last = await runKilledAt(strace!, undefined, ["resume", "--reporter", "plain"], dir);
    steps.push(["resume", last]);
    const violations: string[] = [];
    for (const [step, r] of steps) {
      if (/INTERNAL|\n\s+at /.test(r.stderr)) violations.push(`${step} crashed: ${r.stderr.trim().split("\n").slice(0, 3).join(" | ")}`);
    }
    const files = readRunFiles(dir);
    const runJson = files ? readRunJsonExists(dir, files.runId) : false;
    if (!files || !runJson) {
      // killed before run.json existed: resume has nothing to continue and says so
      if (last.code !== 2) violations.push(`resume of a run that never started exited ${last.code}`);
      return { k, k2, violations, notStarted: true };
    }
    if (last.code !== 0 && last.code !== 3 && last.code !== 1) violations.push(`the last resume exited ${last.code}: ${last.stderr.trim().slice(0, 300)}`);
    violations.push(...logViolations(files));
    const finished = files.events.find((e) => e.type === "run.finished");
    if (finished?.outcome === "complete") violations.push(...c.complete(dir));
    // a second look changes nothing
    last = await runKilledAt(strace!, undefined, ["resume", "--reporter", "plain"], dir);
    const again = readRunFiles(dir)!;
    if (again.events.length !== files.events.length || again.iterations.length !== files.iterations.length) violations.push("resuming a finished run wrote to its log");
    return { k, k2, violations, notStarted: false };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function readRunJsonExists(dir: string, runId: string): boolean {
  try {
    readFileSync(join(dir, ".phaseloop/runs", runId, "run.json"));
    return true;
  } catch {
    return false;
  }
}

/** Runs `jobs` with at most `width` at once. */
async function pool<T>(jobs: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = new Array(jobs.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const i = next++;
        out[i] = await jobs[i]!();
      }
    }),
  );
  return out;
}

describe.skipIf(skipped(!strace, "strace is not installed (apt-get install strace)"))("crash points", () => {
  beforeAll(() => ensureBuilt());

  for (const [index, c] of cases.entries()) {
    it(`${c.name}: killed at every write, rename and unlink, then killed again in its resume, the log holds each thing once`, async () => {
      const calib = mkdtempSync(join(tmpdir(), "phaseloop-crash-calib-"));
      write(calib, c.files);
      const points = await countCrashPoints(strace!, c.args, calib, join(tmpdir(), `phaseloop-crash-trace-${process.pid}-${index}`));
      rmSync(calib, { recursive: true, force: true });
      expect(points).toBeGreaterThan(20);
      // every K for the first case; every third for the longer one (still each kind of point)
      const step = index === 0 || process.env.PHASELOOP_CRASH_ALL ? 1 : 3;
      const ks = Array.from({ length: Math.ceil((points + 2) / step) }, (_unused, i) => 1 + i * step);
      // the resume's kill walks through its own points, and past them (no second kill)
      const k2Of = (k: number) => 1 + ((k * 37) % (points + 8));
      const outcomes = await pool(
        ks.map((k) => () => crashAt(c, k, k2Of(k))),
        2,
      );
      const broken = outcomes.filter((o) => o.violations.length > 0).map((o) => `K=${o.k} K2=${o.k2}: ${o.violations.join("; ")}`);
      if (process.env.PHASELOOP_CRASH_REPORT) console.log(`${c.name}: ${outcomes.length} crash points (of ${points}), ${outcomes.filter((o) => o.notStarted).length} before the run existed, ${broken.length} broken`);
      expect(broken).toEqual([]);
    }, 900_000);
  }

  it("a run killed anywhere whose checkpoint is then lost is rebuilt from its log by resume --force, and the log holds each thing once", async () => {
    const c = cases[1]!;
    const calib = mkdtempSync(join(tmpdir(), "phaseloop-crash-calib-"));
    write(calib, c.files);
    const points = await countCrashPoints(strace!, c.args, calib, join(tmpdir(), `phaseloop-crash-trace-${process.pid}-f`));
    rmSync(calib, { recursive: true, force: true });
    const step = process.env.PHASELOOP_CRASH_ALL ? 1 : 4;
    const ks = Array.from({ length: Math.ceil((points + 2) / step) }, (_unused, i) => 1 + i * step);
    const outcomes = await pool(
      ks.map((k) => () => crashAt(c, k, points + 10, true)),
      2,
    );
    const broken = outcomes.filter((o) => o.violations.length > 0).map((o) => `K=${o.k}: ${o.violations.join("; ")}`);
    if (process.env.PHASELOOP_CRASH_REPORT) console.log(`lost checkpoints: ${outcomes.length} crash points, ${broken.length} broken`);
    expect(broken).toEqual([]);
  }, 900_000);

  it("a run killed at an iteration boundary, and near its end, resumes to the same log whatever point of the resume is killed", async () => {
    const c = cases[0]!;
    const calib = mkdtempSync(join(tmpdir(), "phaseloop-crash-calib-"));
    write(calib, c.files);
    const points = await countCrashPoints(strace!, c.args, calib, join(tmpdir(), `phaseloop-crash-trace-${process.pid}-r`));
    rmSync(calib, { recursive: true, force: true });
    // a resume makes no more calls than a whole run
    const span = points + 2;
    const outcomes = await pool(
      [Math.floor(span / 2), span - 8].flatMap((k) => Array.from({ length: span }, (_unused, i) => () => crashAt(c, k, i + 1))),
      2,
    );
    const broken = outcomes.filter((o) => o.violations.length > 0).map((o) => `K=${o.k} K2=${o.k2}: ${o.violations.join("; ")}`);
    if (process.env.PHASELOOP_CRASH_REPORT) console.log(`resume kills: ${outcomes.length} crash points, ${broken.length} broken`);
    expect(broken).toEqual([]);
  }, 900_000);
});
