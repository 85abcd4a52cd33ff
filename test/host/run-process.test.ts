import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, describe, expect, it } from "vitest";
import { isProcessAlive } from "../../src/host/process-alive.ts";
import { runProcess } from "../../src/host/run-process.ts";

const dir = mkdtempSync(join(tmpdir(), "phaseloop-proc-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const env = { PATH: process.env.PATH };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("runProcess", () => {
  it("runs argv and shell strings and reports the exit code and output", async () => {
    const a = await runProcess({ command: ["sh", "-c", "echo hi; echo err >&2; exit 3"], cwd: dir, env });
    expect(a.exitCode).toBe(3);
    expect(a.stdout).toBe("hi\n");
    expect(a.stderrTail).toBe("err\n");
    const b = await runProcess({ command: "printf '%s' \"$X\"", cwd: dir, env: { ...env, X: "y" } });
    expect(b.stdout).toBe("y");
  });
  it("refuses a NUL byte in an inherited variable on every run, unless the phase's own variable hides it", async () => {
    const clean = { PATH: process.env.PATH, KEEP: "k" };
    const dirty = { PATH: process.env.PATH, BAD: "a\0b" };
    const on = (proto: Record<string, string | undefined>, own: Record<string, string> = {}) => Object.assign(Object.create(proto) as Record<string, string>, own);
    for (let i = 0; i < 2; i++) {
      const r = await runProcess({ command: ["printf", "%s", "ok"], cwd: dir, env: on(dirty, { OWN: String(i) }) });
      expect(r.spawnError).toMatch(/environment variable BAD holds a NUL byte/);
    }
    const hidden = await runProcess({ command: "printf '%s' \"$BAD\"", cwd: dir, env: on(dirty, { BAD: "fine" }) });
    expect(hidden.spawnError).toBeUndefined();
    expect(hidden.stdout).toBe("fine");
    // a clean inheritance, read once, still lets a phase's own bad variable be seen
    expect((await runProcess({ command: "printf '%s' \"$KEEP\"", cwd: dir, env: on(clean) })).stdout).toBe("k");
    expect((await runProcess({ command: ["true"], cwd: dir, env: on(clean, { OWN: "x\0" }) })).spawnError).toMatch(/environment variable OWN holds a NUL byte/);
    expect((await runProcess({ command: ["true"], cwd: dir, env: on(clean, { "K\0": "x" }) })).spawnError).toMatch(/environment variable K\\0 holds/);
  });
  it("writes the prompt to stdin and closes it; stdin is closed otherwise", async () => {
    const a = await runProcess({ command: ["cat"], cwd: dir, env, stdin: "prompt text" });
    expect(a.stdout).toBe("prompt text");
    const b = await runProcess({ command: ["cat"], cwd: dir, env, timeoutMs: 5000 });
    expect(b.timedOut).toBe(false);
    expect(b.stdout).toBe("");
  });
  it("streams lines to the callback and to log files", async () => {
    const lines: string[] = [];
    const out = join(dir, "out.log");
    await runProcess({ command: "echo one; echo two; printf three", cwd: dir, env, stdoutFile: out, onLine: (_, l) => lines.push(l) });
    expect(lines).toEqual(["one", "two", "three"]);
    expect(readFileSync(out, "utf8")).toBe("one\ntwo\nthree");
  });
  it("splits lines however the output is cut, multi-byte characters and CRLF included, and logs the bytes unchanged", async () => {
    const lines: string[] = [];
    const out = join(dir, "split.log");
    // printf writes in pieces: a line cut mid-way, a character cut between its bytes, CRLF endings
    const script = "printf 'al'; sleep 0.05; printf 'pha\\r\\nb\\342'; sleep 0.05; printf '\\202\\254ta\\n\\ngamma'";
    const r = await runProcess({ command: script, cwd: dir, env, stdoutFile: out, onLine: (_, l) => lines.push(l) });
    expect(lines).toEqual(["alpha", "b€ta", "", "gamma"]);
    expect(r.stdout).toBe("alpha\r\nb€ta\n\ngamma");
    expect(readFileSync(out, "utf8")).toBe("alpha\r\nb€ta\n\ngamma");
  });
  it("keeps memory bounded: a line of many megabytes reaches the callback cut, the log file whole", async () => {
    const lines: number[] = [];
    const out = join(dir, "long.log");
    const r = await runProcess({ command: "head -c 6000000 /dev/zero | tr '\\0' x; echo; echo after", cwd: dir, env, stdoutFile: out, onLine: (_, l) => lines.push(l.length) });
    expect(r.exitCode).toBe(0);
    expect(lines).toEqual([4 * 1024 * 1024, 5]);
    expect(readFileSync(out, "utf8").length).toBe(6000000 + 7);
    expect(r.stdoutTail.endsWith("x\nafter\n")).toBe(true);
  });
  it("reports a missing program as a spawn error", async () => {
    const r = await runProcess({ command: ["phaseloop-no-such-program"], cwd: dir, env });
    expect(r.spawnError).toMatch(/command not found/);
  });
  it("kills the whole process group on timeout", async () => {
    const pidFile = join(dir, "grandchild.pid");
    const r = await runProcess({ command: `sleep 30 & echo $! > ${pidFile}; sleep 30; wait`, cwd: dir, env, timeoutMs: 300, killGraceMs: 200 });
    expect(r.timedOut).toBe(true);
    const grandchild = Number(readFileSync(pidFile, "utf8"));
    await sleep(100);
    expect(isProcessAlive(grandchild)).toBe(false);
  });
  it("kills a silent process on idle timeout but not a chatty one", async () => {
    const silent = await runProcess({ command: "sleep 5", cwd: dir, env, idleTimeoutMs: 200, killGraceMs: 100 });
    expect(silent.idleTimedOut).toBe(true);
    const chatty = await runProcess({ command: "for i in 1 2 3 4 5; do echo $i; sleep 0.1; done", cwd: dir, env, idleTimeoutMs: 400 });
    expect(chatty.idleTimedOut).toBe(false);
    expect(chatty.exitCode).toBe(0);
  });
  it("stops on abort", async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const r = await runProcess({ command: "sleep 10", cwd: dir, env, signal: ac.signal, killGraceMs: 100 });
    expect(r.aborted).toBe(true);
  });
});
