import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, readFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, describe, expect, it } from "vitest";
import { acquireLock } from "../../src/runtime/run-lock.ts";

const dir = mkdtempSync(join(tmpdir(), "phaseloop-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the run lock", () => {
  it("is taken, refused to a second run while held, and released", () => {
    const a = acquireLock(dir, "run-a", new Date());
    expect(a.ok).toBe(true);
    // a live holder other than us: pretend with our parent's pid
    writeFileSync(join(dir, ".phaseloop", "lock"), JSON.stringify({ pid: process.ppid, run_id: "run-a", host: hostname(), started_at: "t" }));
    const b = acquireLock(dir, "run-b", new Date());
    expect(b.ok).toBe(false);
    if (!b.ok) expect(b.message).toContain("run-a");
    rmSync(join(dir, ".phaseloop", "lock"));
  });
  it("takes over the lock of a process that is gone", () => {
    const dead = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" });
    const pid = Number(dead.stdout.trim());
    mkdirSync(join(dir, ".phaseloop"), { recursive: true });
    writeFileSync(join(dir, ".phaseloop", "lock"), JSON.stringify({ pid, run_id: "crashed", host: hostname(), started_at: "t" }));
    const c = acquireLock(dir, "run-c", new Date());
    expect(c.ok).toBe(true);
    if (c.ok) {
      expect(c.tookOver?.run_id).toBe("crashed");
      expect(JSON.parse(readFileSync(join(dir, ".phaseloop", "lock"), "utf8")).run_id).toBe("run-c");
      c.release();
    }
  });
});
