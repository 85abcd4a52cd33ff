import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { fewPidsSince, findRunProcesses, madeSince, markPids } from "../../src/host/orphans.ts";
import { skipped } from "../skip-reason.ts";

describe("madeSince: the pids made between two marks of the pid counter", () => {
  const max = 32768;
  it("is every pid after the first mark up to the second, wrapping at pid_max", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max }), fc.integer({ min: 0, max: 2000 }), fc.integer({ min: 1, max }), (from, made, pid) => {
        const to = ((from + made - 1) % max) + 1; // `made` pids handed out in turn after `from`
        const isNew = madeSince({ lastPid: from, at: 0 }, { lastPid: to, at: 10 }, max);
        const distance = (pid - from + max) % max; // how far after `from` the counter reaches pid
        expect(isNew(pid)).toBe(distance >= 1 && distance <= made);
      }),
    );
  });

  it("reads every pid once the counter could have gone all the way round, or without a mark", () => {
    const isNew = madeSince({ lastPid: 100, at: 0 }, { lastPid: 101, at: max / 100 }, max);
    expect(isNew(50)).toBe(true);
    expect(madeSince(undefined, { lastPid: 1, at: 0 }, max)(7)).toBe(true);
    expect(madeSince({ lastPid: 1, at: 0 }, undefined, max)(7)).toBe(true);
  });
});

describe.skipIf(skipped(process.platform !== "linux", "finding a run's processes is Linux only"))("findRunProcesses since a mark", () => {
  it("finds a process of the run started after the mark, and not one started before", async () => {
    const runId = `orphans-${process.pid}`;
    const start = () => spawn("sleep", ["30"], { env: { ...process.env, PHASELOOP_RUN_ID: runId, PHASELOOP_PHASE_DIR: "0001-x" }, stdio: "ignore" });
    const before = start();
    await new Promise((r) => before.once("spawn", r));
    const mark = markPids();
    expect(mark).toBeDefined();
    const after = start();
    await new Promise((r) => after.once("spawn", r));
    try {
      expect(findRunProcesses(runId, "0001-x").sort()).toEqual([before.pid, after.pid].sort());
      expect(findRunProcesses(runId, "0001-x", mark)).toEqual([after.pid]);
    } finally {
      before.kill("SIGKILL");
      after.kill("SIGKILL");
    }
  });
});

describe("fewPidsSince", () => {
  it("lists exactly the pids madeSince accepts when they are few, wrapping at pid_max", () => {
    const max = 32768;
    fc.assert(
      fc.property(fc.integer({ min: 1, max }), fc.integer({ min: 0, max: 300 }), (from, made) => {
        const to = ((from + made - 1) % max) + 1;
        const mark = { lastPid: from, at: 0 };
        const now = { lastPid: to, at: 1 };
        const listed = fewPidsSince(mark, now, max);
        if (made > 256) {
          expect(listed).toBeUndefined();
          return;
        }
        expect(listed).toHaveLength(made);
        const isNew = madeSince(mark, now, max);
        for (const pid of listed!) expect(isNew(pid)).toBe(true);
        expect(new Set(listed).size).toBe(made);
      }),
    );
  });

  it("lists nothing past the window where the counter could have gone round", () => {
    expect(fewPidsSince({ lastPid: 5, at: 0 }, { lastPid: 6, at: 400 }, 32768)).toBeUndefined();
  });
});
