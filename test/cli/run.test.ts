import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { spawn, spawnSync } from "node:child_process";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { findRunProcesses } from "../../src/host/orphans.ts";
import { isProcessAlive } from "../../src/runtime/run-lock.ts";
import { cli, cliAsync, ensureBuilt, events, git, ROOT, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const collatz = (n: number) => {
  const out = [n];
  while (n !== 1) out.push((n = n % 2 ? 3 * n + 1 : n / 2));
  return out;
};

describe("phaseloop run: the hailstone recipe", () => {
  it("completes, with the sequence on disk, exit 0 and the durable state of the brief", () => {
    const dir = tempDir();
    const r = cli(["run", join(ROOT, "pipelines/hailstone.yaml"), "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "hailstone.txt"), "utf8").trim().split("\n").map(Number)).toEqual(collatz(6));
    const run = runDir(dir);
    for (const f of ["run.json", "state.json", "events.jsonl", "iterations.jsonl", "summary.md", "phases/0001-step/prompt.md", "phases/0001-step/stdout.log", "phases/0002-verify/output.json"]) {
      expect(existsSync(join(run, f)), f).toBe(true);
    }
    const ev = events(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete", exit_code: 0, iterations: 9 });
    expect(ev.map((e) => e.seq)).toEqual(ev.map((_, i) => i + 1));
    // phase.started names the phase's artifact directory as docs/events.md says: phases/<dir>/
    expect(ev.find((e) => e.type === "phase.started")).toMatchObject({ phase: "step", dir: "0001-step" });
    expect(r.stdout).not.toContain("phases/phases/");
    expect(readFileSync(join(run, "iterations.jsonl"), "utf8").trim().split("\n")).toHaveLength(9);
    expect(JSON.parse(readFileSync(join(run, "run.json"), "utf8"))).toMatchObject({ pipeline: "hailstone", params: { start: 6 } });
    expect(existsSync(join(dir, ".phaseloop/lock"))).toBe(false);
  });

  it("stops with exit 3 when the iterations run out", () => {
    const dir = tempDir();
    const r = cli(["run", join(ROOT, "pipelines/hailstone.yaml"), "--param", "start=27", "--max-iterations", "5", "--reporter", "json"], dir);
    expect(r.code).toBe(3);
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-2)).toMatchObject({ type: "run.finished", outcome: "stopped", reason: { code: "max_iterations" } });
    // and, as every reporter ends, where the run's files are
    expect(lines.at(-1)).toMatchObject({ type: "run.folder", folder: `.phaseloop/runs/${String(lines.at(-2)!.run)}/`, summary: `.phaseloop/runs/${String(lines.at(-2)!.run)}/summary.md` });
  });

  it("refuses a param of the wrong type with exit 2 and runs nothing", () => {
    const dir = tempDir();
    const r = cli(["run", join(ROOT, "pipelines/hailstone.yaml"), "--param", "start=many"], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/PARAM_INVALID param "start" must be a whole number/);
    expect(existsSync(join(dir, ".phaseloop"))).toBe(false);
  });

  it("prints the machine and the exact commands with --dry-run", () => {
    const dir = tempDir();
    const r = cli(["run", join(ROOT, "pipelines/hailstone.yaml"), "--dry-run"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/loop head: step/);
    expect(r.stdout).toMatch(/step: \["node",".*hailstone\/agent\.mjs","hailstone\.txt","6"\] \(prompt on stdin\)/);
    expect(existsSync(join(dir, ".phaseloop"))).toBe(false);
  });
});

describe("phaseloop run: preflight", () => {
  const readme = `phaseloop: 1
name: fix-the-tests
agents:
  worker: { preset: claude, model: sonnet }
tools:
  build: { read: ["**"], write: ["src/**", "test/**"], bash: ["npm test"] }
phases:
  execute:
    agent: worker
    tools: build
    prompt: Make the tests pass.
  verify:
    run: npm test
    next:
      - if: exit_code == 0
        stop: complete
      - goto: execute
stop:
  max_iterations: 5
  no_progress: 2
`;
  // a PATH with sh and node but no agent CLI
  const bare = { PATH: `${dirname(process.execPath)}:/usr/bin:/bin` };

  it("stops a pipeline whose agent is not installed before anything runs: exit 2, located, no run folder", () => {
    const dir = tempDir();
    write(dir, { "fix.yaml": readme });
    for (const args of [["run", "fix.yaml"], ["run", "fix.yaml", "--dry-run"]]) {
      const r = cli(args, dir, bare);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^fix\.yaml:4:21: error AGENT_NOT_FOUND agent "worker" cannot start: the claude preset runs "claude"/m);
      expect(r.stderr).toMatch(/hint: install Claude Code/);
      expect(existsSync(join(dir, ".phaseloop"))).toBe(false);
    }
  });

  it("runs once the program is on PATH, and records its version in run.json", () => {
    const dir = tempDir();
    write(dir, { "fix.yaml": readme.replace("    tools: build\n", "").replace("run: npm test", "run: 'true'"), "bin/claude.sh": "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '9.9.9 (Claude Code)'; exit 0; fi\necho '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\"}'\n" });
    spawnSync("mv", [join(dir, "bin/claude.sh"), join(dir, "bin/claude")]);
    const r = cli(["run", "fix.yaml", "--reporter", "plain"], dir, { PATH: `${join(dir, "bin")}:${bare.PATH}` });
    expect(r.stderr).toBe("");
    const info = JSON.parse(readFileSync(join(runDir(dir), "run.json"), "utf8")) as { agents: Record<string, string> };
    expect(info.agents).toEqual({ worker: "9.9.9 (Claude Code)" });
  });
});

const pipeline = (body: string) => `phaseloop: 1\nname: e2e\n${body}`;

describe("phaseloop run: outcomes, failures and limits", () => {
  it("exits 1 on a failed outcome and 2 on an invalid pipeline", () => {
    const dir = tempDir();
    write(dir, {
      "fail.yaml": pipeline("phases:\n  a:\n    run: exit 4\n    next:\n      - if: exit_code == 4\n        stop: failed\n        reason: 'exit {{ exit_code }}'\nstop: { max_iterations: 2 }\n"),
      "bad.yaml": pipeline("phases:\n  a:\n    run: 'true'\n    next: [{ goto: b }]\nstop: { max_iterations: 2 }\n"),
    });
    const f = cli(["run", "fail.yaml", "--reporter", "plain"], dir);
    expect(f.code).toBe(1);
    expect(f.stdout).toMatch(/exit 4/);
    const b = cli(["run", "bad.yaml"], dir);
    expect(b.code).toBe(2);
    expect(b.stderr).toMatch(/^bad\.yaml:6:\d+: error UNKNOWN_PHASE unknown phase "b"/m);
    expect(b.stderr).not.toMatch(/at .*\.js:\d+/);
  });

  it("kills the whole process group on timeout and idle timeout", () => {
    const dir = tempDir();
    write(dir, {
      "t.yaml": pipeline(
        "sandbox: off\nphases:\n  slow:\n    run: 'sleep 30 & echo $! > child.pid; wait'\n    timeout: 500ms\n  quiet:\n    run: 'echo hi; sleep 30'\n    idle_timeout: 400ms\n    next:\n      - if: phases.slow.error == 'timeout' && error == 'idle_timeout'\n        stop: blocked\n        reason: both timed out\nstop: { max_iterations: 1 }\n",
      ),
    });
    const r = cli(["run", "t.yaml", "--reporter", "plain"], dir);
    expect(r.stdout).toMatch(/both timed out/);
    expect(r.code).toBe(3);
    const pid = Number(readFileSync(join(dir, "child.pid"), "utf8"));
    expect(isProcessAlive(pid)).toBe(false);
  });

  it("ends the processes that left the phase's group when the phase ends, and only that phase's", () => {
    const dir = tempDir();
    // `keep` starts a process in a session of its own: the phase's end kills it (a zombie not yet reaped counts as gone);
    // `busy` first makes a few short processes, so the one that escapes is not the next pid after the phase's
    write(dir, {
      "t.yaml": pipeline(
        "sandbox: off\nphases:\n  keep:\n    run: 'setsid sh -c \"echo \\$\\$ > kept.pid; exec sleep 30\" > /dev/null 2>&1 < /dev/null & while [ ! -s kept.pid ]; do sleep 0.01; done'\n  busy:\n    run: 'true; true; ls > /dev/null; setsid sh -c \"echo \\$\\$ > busy.pid; exec sleep 30\" > /dev/null 2>&1 < /dev/null & while [ ! -s busy.pid ]; do sleep 0.01; done'\n  check:\n    run: ['sh', '-c', 'for f in kept.pid busy.pid; do s=$(sed \"s/.*) //\" /proc/$(cat $f)/stat 2>/dev/null | cut -c1); [ -n \"$s\" ] && [ \"$s\" != Z ] && echo alive || echo gone; done']\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n",
      ),
    });
    // a process of the same user that is not the run's
    const outsider = spawn("sh", ["-c", "exec sleep 30"], { detached: true, stdio: "ignore" });
    try {
      const r = cli(["run", "t.yaml", "--reporter", "json"], dir);
      expect(r.code).toBe(0);
      const finished = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.type === "phase.finished" && e.phase === "check");
      expect(finished).toHaveLength(1);
      // by the time the next phase ran, both were gone
      expect(readFileSync(join(runDir(dir), "phases", "0003-check", "stdout.log"), "utf8")).toBe("gone\ngone\n");
      // and what was not the run's is left alone
      expect(isProcessAlive(outsider.pid!)).toBe(true);
    } finally {
      outsider.kill("SIGKILL");
    }
  });

  it("retries transient failures with backoff, and a stale output file is never read", () => {
    const dir = tempDir();
    write(dir, {
      "agent.sh": '#!/bin/sh\nn=$(cat count 2>/dev/null || echo 0); n=$((n+1)); echo $n > count\nif [ $n -lt 3 ]; then echo "HTTP 503 Service Unavailable" >&2; exit 1; fi\necho "<verdict>PASS</verdict>"\n',
      "r.yaml": pipeline(
        "agents:\n  a: { command: ['./agent.sh'] }\nphases:\n  gen:\n    agent: a\n    prompt: go ahead\n    retry: { max_attempts: 4, interval: 50ms }\n    output:\n      verdict: { tag: verdict, default: REJECT }\n      review: { file: review.json }\n    next:\n      - if: output.verdict == 'PASS' && output.review == null\n        stop: complete\nstop: { max_iterations: 1 }\n",
      ),
      "review.json": '{"stale": true}',
    });
    const r = cli(["run", "r.yaml", "--reporter", "json"], dir);
    expect(r.code).toBe(0);
    const retries = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((e) => e.type === "phase.retry");
    expect(retries.map((e) => [e.error, e.delay_ms])).toEqual([
      ["transient", 50],
      ["transient", 100],
    ]);
    expect(existsSync(join(dir, "review.json"))).toBe(false);
  });

  it("fails a phase whose agent changes files outside its write globs, and reverts them when asked", () => {
    const dir = tempDir();
    git(dir, "init", "-q");
    write(dir, {
      "src/a.txt": "original\n",
      "agent.sh": "#!/bin/sh\necho changed > src/a.txt\necho new > notes.txt\n",
      "w.yaml": pipeline(
        "agents:\n  a: { command: ['./agent.sh'] }\ntools:\n  docs: { write: ['docs/**'], on_violation: revert }\nphases:\n  edit:\n    agent: a\n    tools: docs\n    prompt: edit the docs\n    next:\n      - if: error == 'policy_violation'\n        stop: blocked\n        reason: '{{ last_failure.message }}'\n      - stop: complete\nstop: { max_iterations: 1 }\n",
      ),
    });
    git(dir, "add", "-A");
    git(dir, "commit", "-qm", "init");
    // the check after the phase, on its own: in the OS sandbox the write would not have happened
    const r = cli(["run", "w.yaml", "--reporter", "plain", "--sandbox", "off"], dir);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/outside the write scope.*notes\.txt, src\/a\.txt/);
    expect(readFileSync(join(dir, "src/a.txt"), "utf8")).toBe("original\n");
    expect(existsSync(join(dir, "notes.txt"))).toBe(false);
  });

  it("runs hooks with PHASELOOP_* variables", () => {
    const dir = tempDir();
    write(dir, {
      "h.yaml": pipeline(
        "phases:\n  a:\n    run: 'true'\n    next: [{ stop: complete, reason: all good }]\nstop: { max_iterations: 1 }\nhooks:\n  before_iteration: 'echo \"before $PHASELOOP_ITERATION $PHASELOOP_RUN_ID\" >> hooks.log'\n  on_complete: 'echo \"done $PHASELOOP_OUTCOME: $PHASELOOP_REASON\" >> hooks.log'\n",
      ),
    });
    expect(cli(["run", "h.yaml"], dir).code).toBe(0);
    const log = readFileSync(join(dir, "hooks.log"), "utf8");
    expect(log).toMatch(/^before 1 \d{8}-\d{6}-\w{4}\ndone complete: all good\n$/);
  });

  it("gives hooks the run's artifacts folder, which they may write in the fence as phases do", () => {
    const dir = tempDir();
    write(dir, {
      "h.yaml": pipeline(
        "phases:\n  a:\n    run: 'echo from-phase > \"$PHASELOOP_ARTIFACTS/a.txt\"'\n    next: [{ stop: complete }]\nstop: { max_iterations: 1 }\nhooks:\n  on_complete: 'cat \"$PHASELOOP_ARTIFACTS/a.txt\" > \"$PHASELOOP_ARTIFACTS/b.txt\" && echo \"$PHASELOOP_ARTIFACTS\" > hook.out'\n",
      ),
    });
    const r = cli(["run", "h.yaml", "--reporter", "plain"], dir);
    expect(r.stderr + r.stdout).not.toMatch(/refused/);
    expect(r.code).toBe(0);
    const artifacts = readFileSync(join(dir, "hook.out"), "utf8").trim();
    expect(artifacts).toMatch(/\/\.phaseloop\/runs\/\d{8}-\d{6}-\w{4}\/artifacts$/);
    expect(readFileSync(join(artifacts, "b.txt"), "utf8")).toBe("from-phase\n");
  });

  it("refuses a second run in a workdir held by a live run, naming it", () => {
    const dir = tempDir();
    write(dir, { ".phaseloop/lock": JSON.stringify({ pid: process.pid, run_id: "20260101-000000-live", host: (globalThis as { __h?: string }).__h ?? require_hostname(), started_at: "2026-01-01T00:00:00Z" }) });
    const r = cli(["run", join(ROOT, "pipelines/hailstone.yaml")], dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/in use by run 20260101-000000-live/);
  });
});

function require_hostname(): string {
  return readFileSync("/proc/sys/kernel/hostname", "utf8").trim();
}

describe("params", () => {
  it("an empty param in a write glob allows nothing, and never crashes", () => {
    const dir = tempDir();
    const r = cli(["run", join(ROOT, "pipelines/hailstone.yaml"), "--param", "file=", "--reporter", "plain"], dir);
    expect(r.stderr).not.toMatch(/INTERNAL/);
    expect(r.code).toBe(1);
  });
});

describe("interruption and resume", () => {
  const slowHailstone = (dir: string) =>
    write(dir, {
      "slow.sh": `#!/bin/sh\nsleep 0.15\nexec node ${join(ROOT, "pipelines/hailstone/agent.mjs")} "$@"\n`,
      "p.yaml": readFileSync(join(ROOT, "pipelines/hailstone.yaml"), "utf8")
        .replace('command: [node, "{{ pipeline.dir }}/hailstone/agent.mjs"', 'command: ["{{ pipeline.dir }}/slow.sh"')
        .replace(/hailstone\/step\.md/, "step.md")
        .replace('run: [node, "{{ pipeline.dir }}/hailstone/verify.mjs"', `run: [node, "${join(ROOT, "pipelines/hailstone/verify.mjs")}"`),
      "step.md": "Append the next term to {{ params.file }}.\n",
    });

  it("SIGINT stops the run with exit 130, and resume finishes it", async () => {
    const dir = tempDir();
    slowHailstone(dir);
    const run = cliAsync(["run", "p.yaml", "--param", "start=7", "--reporter", "plain"], dir);
    await new Promise((r) => setTimeout(r, 1500));
    process.kill(run.child.pid!, "SIGINT"); // not child.kill: Deno reports a signal it sent as the cause of exit
    const first = await run.done;
    expect(first.code).toBe(130);
    expect(first.stderr).toMatch(/resume with: phaseloop resume/);
    expect(existsSync(join(dir, ".phaseloop/lock"))).toBe(false);
    const ev = events(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.interrupted" });
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "hailstone.txt"), "utf8").trim().split("\n").map(Number)).toEqual(collatz(7));
    // seventeen sandboxed phases: on a loaded machine each costs a namespace setup of tens of ms
  }, 240_000);

  it("resumes after kill -9 at random moments, losing and repeating no finished phase", async () => {
    const dir = tempDir();
    slowHailstone(dir);
    let code: number | null = null;
    // a run killed before it set up its run directory ran nothing: it starts again (a loaded machine starts slowly)
    const started = () => existsSync(join(dir, ".phaseloop", "runs")) && readdirSync(join(dir, ".phaseloop", "runs")).some((n) => !n.startsWith("."));
    for (let round = 0; round < 6 && code !== 0; round++) {
      const args = !started() ? ["run", "p.yaml", "--param", "start=7", "--reporter", "plain"] : ["resume", "--reporter", "plain"];
      const run = cliAsync(args, dir);
      const killer = setTimeout(() => run.child.kill("SIGKILL"), 300 + Math.floor(Math.random() * 900));
      const r = await run.done;
      clearTimeout(killer);
      code = r.code;
    }
    let said = "";
    if (code !== 0) {
      const last = cli(started() ? ["resume", "--reporter", "plain"] : ["run", "p.yaml", "--param", "start=7", "--reporter", "plain"], dir);
      code = last.code;
      said = last.stdout + last.stderr;
    }
    expect(code, said).toBe(0);
    expect(readFileSync(join(dir, "hailstone.txt"), "utf8").trim().split("\n").map(Number)).toEqual(collatz(7));
    const finished = events(dir).filter((e) => e.type === "phase.finished");
    const keys = finished.map((e) => `${e.iteration}:${e.phase}:${e.attempt}`);
    expect(new Set(keys).size).toBe(keys.length);
    const seqs = events(dir).map((e) => e.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
  }, 120_000);

  const sleeper = (dir: string) =>
    write(dir, {
      "p.yaml": `phaseloop: 1
name: sleeper
# the unfenced path: in the fence, bubblewrap's PID namespace ends the phase with phaseloop
sandbox: off
phases:
  work:
    run: [sh, -c, "if [ -f second ]; then exit 0; fi; touch second; sleep 30"]
    next:
      - stop: complete
stop: { max_iterations: 1 }
`,
    });
  const waitFor = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  };

  it.skipIf(process.platform !== "linux")("stops a phase left running by a killed run before resuming it", async () => {
    const dir = tempDir();
    sleeper(dir);
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await waitFor(() => existsSync(join(dir, "second")));
    process.kill(run.child.pid!, "SIGKILL");
    await run.done;
    const runId = readFileSync(join(dir, ".phaseloop/lock"), "utf8").match(/"run_id":\s*"([^"]+)"/)![1]!;
    const left = findRunProcesses(runId);
    expect(left.length).toBeGreaterThan(0); // kill -9 cannot stop the phase's own process group
    const r = cli(["resume", "--reporter", "json"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/stopped \d+ process(es)? left running by an earlier life of run/);
    expect(left.filter((pid) => isProcessAlive(pid))).toEqual([]);
    expect(findRunProcesses(runId)).toEqual([]);
  }, 60_000);

  it.skipIf(process.platform === "win32")("a closed terminal (SIGHUP) interrupts like SIGINT: the phase is stopped, exit 130", async () => {
    const dir = tempDir();
    sleeper(dir);
    const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], dir);
    await waitFor(() => existsSync(join(dir, "second")));
    const runId = readFileSync(join(dir, ".phaseloop/lock"), "utf8").match(/"run_id":\s*"([^"]+)"/)![1]!;
    process.kill(run.child.pid!, "SIGHUP");
    expect((await run.done).code).toBe(130);
    expect(events(dir).at(-1)).toMatchObject({ type: "run.interrupted", signal: "SIGHUP" });
    expect(findRunProcesses(runId)).toEqual([]);
  }, 60_000);

  it("refuses to resume a pipeline that changed, unless forced", async () => {
    const dir = tempDir();
    slowHailstone(dir);
    const run = cliAsync(["run", "p.yaml", "--param", "start=7"], dir);
    await new Promise((r) => setTimeout(r, 800));
    process.kill(run.child.pid!, "SIGTERM");
    expect((await run.done).code).toBe(130);
    writeFileSync(join(dir, "step.md"), "Changed prompt for {{ params.file }}.\n");
    const refused = cli(["resume"], dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/changed since run .* started \(.*step\.md changed\); resume with --force/);
    expect(cli(["resume", "--force"], dir).code).toBe(0);
  }, 60_000);
});

describe("status and logs on a real run", () => {
  it("show the outcome and the events", () => {
    const dir = tempDir();
    expect(cli(["run", join(ROOT, "pipelines/hailstone.yaml")], dir).code).toBe(0);
    const s = cli(["status", "--json"], dir);
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout)).toMatchObject({ state: "complete", pipeline: "hailstone" });
    const l = cli(["logs"], dir);
    expect(l.code).toBe(0);
    expect(l.stdout).toMatch(/run complete/);
  });
});
