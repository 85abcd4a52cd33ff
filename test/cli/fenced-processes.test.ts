/**
 * A phase's processes under the defaults, where a run phase is in the OS sandbox: a timeout
 * ends its whole tree, a process that left its group is gone before the next phase, and a
 * killed run leaves nothing of its phase running for resume to meet. A pid a phase writes is
 * its PID namespace's, so each process is found from outside, by its own argv (`sleep` with a
 * duration no other process has). The same behaviour unfenced is in run.test.ts.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { isProcessAlive } from "../../src/runtime/run-lock.ts";
import { cli, cliAsync, ensureBuilt, events, git, tempDir, write } from "./cli-helpers.ts";

const probe = probeSandbox();

beforeAll(() => ensureBuilt(), 120_000);

/** A `sleep` duration no other process on the machine has: the mark a process is found by. */
const mark = () => `30.${process.pid}${Math.floor(Math.random() * 1e6)}`;

/** The live (not zombie) processes whose argv is `sleep MARK`, seen from outside any sandbox. */
function sleeping(duration: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (argv[0]?.endsWith("sleep") && argv[1] === duration && readFileSync(`/proc/${name}/stat`, "utf8").replace(/^.*\) /s, "")[0] !== "Z") found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

function repo(files: Record<string, string>): string {
  const dir = tempDir();
  git(dir, "init", "-q");
  write(dir, { ".gitignore": "node_modules/\n.phaseloop/\n", ...files });
  return dir;
}

const fencedStarts = (dir: string) => events(dir).filter((e) => e.type === "phase.started").map((e) => e.sandbox);

describe.skipIf(process.platform !== "linux" || !probe.available)("a phase's processes under the defaults (run phases in the OS sandbox)", () => {
  it("a timeout and an idle timeout end the phase's whole tree", () => {
    const [a, b] = [mark(), mark()];
    const dir = repo({
      "t.yaml": `phaseloop: 1\nname: e2e\nphases:\n  slow:\n    run: 'sleep ${a} & echo $! > child.pid; wait'\n    timeout: 500ms\n  quiet:\n    run: 'echo hi; sleep ${b}'\n    idle_timeout: 400ms\n    next:\n      - if: phases.slow.error == 'timeout' && error == 'idle_timeout'\n        stop: blocked\n        reason: both timed out\nstop: { max_iterations: 1 }\n`,
    });
    const r = cli(["run", "t.yaml", "--reporter", "plain"], dir);
    expect(r.stdout).toMatch(/both timed out/);
    expect(r.code).toBe(3);
    expect(fencedStarts(dir)).toEqual([true, true]);
    expect(existsSync(join(dir, "child.pid"))).toBe(true); // the background child was started
    expect(sleeping(a)).toEqual([]);
    expect(sleeping(b)).toEqual([]);
  }, 60_000);

  it("processes that left the phase's group are gone by the time the next phase runs, and nothing else is touched", () => {
    const [a, b] = [mark(), mark()];
    const dir = repo({
      // the check runs outside the fence, to see the host's processes
      "check.js": `const fs = require("node:fs");\nfor (const m of process.argv.slice(2)) {\n  const alive = fs.readdirSync("/proc").filter((n) => /^\\d+$/.test(n)).some((n) => { try { const argv = fs.readFileSync("/proc/" + n + "/cmdline", "utf8").split("\\0"); return argv[0].endsWith("sleep") && argv[1] === m && fs.readFileSync("/proc/" + n + "/stat", "utf8").replace(/^.*\\) /s, "")[0] !== "Z"; } catch { return false; } });\n  console.log(alive ? "alive" : "gone");\n}\n`,
      "t.yaml": `phaseloop: 1\nname: e2e\nphases:\n  keep:\n    run: 'setsid sh -c "echo \\$\\$ > kept.pid; exec sleep ${a}" > /dev/null 2>&1 < /dev/null & while [ ! -s kept.pid ]; do sleep 0.01; done'\n  busy:\n    run: 'true; ls > /dev/null; setsid sh -c "echo \\$\\$ > busy.pid; exec sleep ${b}" > /dev/null 2>&1 < /dev/null & while [ ! -s busy.pid ]; do sleep 0.01; done'\n  check:\n    run: [node, check.js, "${a}", "${b}"]\n    sandbox: off\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n`,
    });
    const outsider = spawn("sh", ["-c", "exec sleep 30"], { detached: true, stdio: "ignore" });
    try {
      const r = cli(["run", "t.yaml", "--reporter", "plain"], dir);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(fencedStarts(dir)).toEqual([true, true, false]);
      expect([existsSync(join(dir, "kept.pid")), existsSync(join(dir, "busy.pid"))]).toEqual([true, true]); // both were started
      const check = readdirSync(join(dir, ".phaseloop/runs"))[0]!;
      expect(readFileSync(join(dir, ".phaseloop/runs", check, "phases", "0003-check", "stdout.log"), "utf8")).toBe("gone\ngone\n");
      expect(isProcessAlive(outsider.pid!)).toBe(true);
    } finally {
      outsider.kill("SIGKILL");
    }
  }, 60_000);

  it("a run killed with -9 leaves nothing of its phase running, and resume runs the phase again to the end", async () => {
    const a = mark();
    const dir = repo({
      "p.yaml": `phaseloop: 1\nname: sleeper\nphases:\n  work:\n    run: [sh, -c, "if [ -f second ]; then exit 0; fi; touch second; sleep ${a}"]\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n`,
    });
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    for (let i = 0; i < 400 && sleeping(a).length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(sleeping(a)).toHaveLength(1);
    process.kill(run.child.pid!, "SIGKILL");
    await run.done;
    for (let i = 0; i < 200 && sleeping(a).length > 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(sleeping(a)).toEqual([]);
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(fencedStarts(dir).every((s) => s === true)).toBe(true);
    expect(sleeping(a)).toEqual([]);
  }, 60_000);
});
