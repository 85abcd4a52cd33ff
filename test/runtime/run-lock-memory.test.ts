/** The run lock on the memory host: taken, refused while a live run holds it, taken over from a dead one, released. */
import { describe, expect, it } from "vitest";
import { MemoryHost } from "../../src/host/memory-host.ts";
import { acquireLock, lockPathProblem, machineName } from "../../src/runtime/run-lock.ts";

const at = new Date(Date.UTC(2026, 0, 1));
const lockOf = (host: MemoryHost) => JSON.parse(host.files.readText("/w/.phaseloop/lock"));

describe("the run lock on the memory host", () => {
  it("is taken with the run's pid, id, host and start, and released only by its holder", () => {
    const host = new MemoryHost({ cwd: "/w", env: { HOSTNAME: "box" } });
    const lock = acquireLock("/w", "run-a", at, host);
    expect(lock.ok).toBe(true);
    expect(lockOf(host)).toEqual({ pid: host.pid, run_id: "run-a", host: machineName(host), started_at: at.toISOString() });
    expect(host.files.readText("/w/.phaseloop/.gitignore")).toBe("*\n");
    expect(host.files.readdir("/w/.phaseloop").sort()).toEqual([".gitignore", "lock"]);
    if (lock.ok) lock.release();
    expect(host.files.exists("/w/.phaseloop/lock")).toBe(false);
  });

  it("is refused while another live run holds it, and taken over once that run is gone", () => {
    const live = new MemoryHost({ cwd: "/w", alive: [77] });
    live.files.mkdir("/w/.phaseloop");
    live.files.writeText("/w/.phaseloop/lock", JSON.stringify({ pid: 77, run_id: "other", host: machineName(live), started_at: "t" }));
    const refused = acquireLock("/w", "mine", at, live);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.message).toContain("in use by run other (pid 77");
    expect(lockOf(live).run_id).toBe("other");
    expect(live.files.readdir("/w/.phaseloop").filter((f) => f.startsWith("lock."))).toEqual([]);

    const after = live.restart({ alive: [] });
    const took = acquireLock("/w", "mine", at, after);
    expect(took.ok && took.tookOver?.run_id).toBe("other");
    expect(lockOf(after).run_id).toBe("mine");
  });

  it("names a lock held on another machine instead of taking it", () => {
    const host = new MemoryHost({ cwd: "/w" });
    host.files.mkdir("/w/.phaseloop");
    host.files.writeText("/w/.phaseloop/lock", JSON.stringify({ pid: 1, run_id: "far", host: "elsewhere", started_at: "t" }));
    const lock = acquireLock("/w", "mine", at, host);
    expect(!lock.ok && lock.message).toContain("on host elsewhere");
  });

  it("reports a .phaseloop or lock that is not a folder and a file, and never replaces it", () => {
    const host = new MemoryHost({ cwd: "/w" });
    host.files.mkdir("/w/.phaseloop/lock");
    expect(lockPathProblem("/w", host)).toMatch(/lock: error LOCK_INVALID is a directory, not a file/);
    const lock = acquireLock("/w", "mine", at, host);
    expect(lock.ok).toBe(false);
    expect(host.files.stat("/w/.phaseloop/lock")?.isDirectory()).toBe(true);
  });

  it("leaves nothing half-made when the host crashes at any of its writes", () => {
    for (let n = 1; n <= 6; n++) {
      const host = new MemoryHost({ cwd: "/w", crashAt: n });
      try {
        acquireLock("/w", "run-a", at, host);
      } catch {
        // the crash
      }
      const after = host.restart();
      const lock = acquireLock("/w", "run-b", at, after);
      expect(lock.ok, `crash at write ${n}`).toBe(true);
      expect(lockOf(after).run_id).toBe("run-b");
    }
  });
});
