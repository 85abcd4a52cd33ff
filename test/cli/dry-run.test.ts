/**
 * `run --dry-run` shows what `run` does: each phase's argv, the variables phaseloop sets, the
 * sandbox each phase gets and its outputs. The same pipeline is dry-run, then run with
 * recording agents (a claude on PATH that records what it was started with, and a command
 * agent that does the same); what they recorded, and what the run logged, must be what the
 * dry run said.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, tempDir, write } from "./cli-helpers.ts";
import { skipped } from "../skip-reason.ts";

/** Records its argv, the names of its environment and its stdin into the run's artifacts folder; as claude, answers in stream-json. */
const RECORDER = `#!/usr/bin/env node
const { writeFileSync, readFileSync } = require("node:fs");
const { basename, join } = require("node:path");
const args = process.argv.slice(2);
const asClaude = basename(process.argv[1]) === "claude";
if (args[0] === "--version") { console.log("2.1.197 (Claude Code)"); process.exit(0); }
let stdin = "";
try { stdin = readFileSync(0, "utf8"); } catch {}
writeFileSync(join(process.env.PHASELOOP_ARTIFACTS, process.env.PHASELOOP_PHASE + ".json"), JSON.stringify({ argv: args, env: Object.keys(process.env), stdin }));
if (asClaude) {
  const line = (o) => console.log(JSON.stringify(o));
  line({ type: "system", subtype: "init", session_id: "s1", model: "haiku", permissionMode: "dontAsk", mcp_servers: [{ name: "notes", status: "connected" }] });
  line({ type: "result", subtype: "success", is_error: false, result: "{\\"ok\\":true}", structured_output: { ok: true }, session_id: "s1", num_turns: 1, usage: { input_tokens: 1, output_tokens: 1 } });
} else console.log("done");
`;

const PIPELINE = `phaseloop: 1
name: dry-vs-run
params:
  tier: { type: string, default: small }
mcp:
  notes: { command: [node, notes-server.mjs] }
agents:
  planner: { preset: claude, model: sonnet, models: { small: haiku } }
  recorder: { command: [node, bin/recorder, "{{ params.tier }}", "{{ prompt_file }}"], env: { REC_MODE: "on" } }
tools:
  build: { read: ["**"], write: ["src/**"], bash: ["npm test"] }
phases:
  plan:
    agent: planner
    model: small
    tools: build
    mcp: [notes]
    prompt: "Plan the work into {{ run.artifacts }}/plan.md"
    output:
      answer: { json: true, schema: { type: object, required: [ok] } }
  work:
    agent: recorder
    tools: build
    prompt: work on it
    env: { STEP: "{{ iteration }}" }
  check:
    run: "true"
    next:
      - if: exit_code == 0
        stop: complete
stop: { max_iterations: 1 }
`;

interface Plan {
  phases: { phase: string; kind: string; command?: string | string[]; stdin?: string; env?: string[]; sandbox?: { mode: string; state: string; env?: string[] }; outputs?: Record<string, string>; timeout_ms?: number; retry?: unknown; error?: string }[];
  sandbox: { available: boolean };
  diagnostics: unknown[];
}

/** Names a shell or the kernel adds on its own, in any process. */
const ADDED_BY_SHELL = new Set(["PWD", "SHLVL", "_", "OLDPWD"]);

describe("run --dry-run against the run that follows it", () => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(() => {
    ensureBuilt();
    dir = tempDir("phaseloop-dry-run-");
    write(dir, { "pipeline.yaml": PIPELINE, "bin/recorder": RECORDER, "bin/claude": RECORDER, "notes-server.mjs": "process.stdin.resume();\n", ".gitignore": "node_modules/\ndist/\n*.log\n.env\ncoverage/\n" });
    spawnSync("chmod", ["+x", join(dir, "bin/recorder"), join(dir, "bin/claude")]);
    for (const args of [["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"]]) spawnSync("git", args, { cwd: dir });
    // GITHUB_TOKEN: a variable of the user's that the fence keeps out of every phase
    env = { PATH: `${join(dir, "bin")}:${process.env.PATH}`, HOME: tempDir("phaseloop-dry-home-"), GITHUB_TOKEN: "not-for-agents" };
  }, 120_000);

  // the comparison is of variable names: Deno's test runner adds npm_config_* variables of its own to the CLI it starts
  it.skipIf(skipped(process.env.PHASELOOP_TEST_RUNTIME === "deno", "under Deno's test runner the started CLI inherits the runner's own npm_config_* variables"))("says what each phase runs, its variables by name, its sandbox and outputs, and the run does exactly that", () => {
    const dry = cli(["run", "pipeline.yaml", "--dry-run", "--json"], dir, env);
    expect(dry.stderr).toBe("");
    expect(dry.code).toBe(0);
    const plan = JSON.parse(dry.stdout) as Plan;
    expect(plan.phases.map((p) => p.phase)).toEqual(["plan", "work", "check"]);
    const [plan1, work, check] = plan.phases as [Plan["phases"][number], Plan["phases"][number], Plan["phases"][number]];
    // what the issue met: the phase's tier, the structured answer, the MCP servers and the artifacts folder
    const argv = plan1.command as string[];
    expect(argv[0]).toBe("claude");
    expect(argv).toContain("--model=haiku");
    expect(argv.some((a) => a.startsWith("--json-schema="))).toBe(true);
    expect(argv.some((a) => a.startsWith("--mcp-config="))).toBe(true);
    expect(argv.find((a) => a.startsWith("--allowedTools="))).toContain(".phaseloop/runs/RUN_ID/artifacts/**");
    expect(plan1.stdin).toBe("prompt");
    expect(plan1.outputs).toEqual({ answer: "json of the final message, with a schema" });
    expect(work.env).toEqual(expect.arrayContaining(["REC_MODE", "STEP", "PHASELOOP_RUN_ID", "PHASELOOP_ARTIFACTS"]));
    expect(check.command).toBe("true");
    expect(check.timeout_ms).toBe(600_000);
    // values are never shown
    expect(dry.stdout).not.toContain(env.HOME);
    expect(dry.stdout).not.toContain("not-for-agents");
    if (plan.sandbox.available) expect(work.sandbox).toMatchObject({ state: "on", withheld: expect.arrayContaining(["GITHUB_TOKEN"]) });

    const run = cli(["run", "pipeline.yaml", "--reporter", "plain"], dir, env);
    expect(run.stderr).not.toMatch(/internal error/);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const runs = readdirSync(join(dir, ".phaseloop/runs"));
    expect(runs).toHaveLength(1);
    const runId = runs[0]!;
    const runDir = join(dir, ".phaseloop/runs", runId);
    const normal = (v: unknown) => JSON.parse(JSON.stringify(v).replaceAll(runId, "RUN_ID").replace(/\/phases\/\d{4}-/g, "/phases/NNNN-"));
    const events = readFileSync(join(runDir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const info = JSON.parse(readFileSync(join(runDir, "run.json"), "utf8")) as { sandbox: { phases: Record<string, string> } };
    for (const p of plan.phases) {
      const started = events.find((e) => e.type === "phase.started" && e.phase === p.phase)!;
      expect(started, p.phase).toBeDefined();
      // the command the run logged is the one the dry run showed
      expect(normal(started.command), p.phase).toEqual(normal(p.command));
      // the sandbox the run gave it is the one the dry run said
      expect(started.sandbox, p.phase).toBe(p.sandbox!.state === "on");
      expect(info.sandbox.phases[p.phase], p.phase).toBe(p.sandbox!.state);
    }
    // what the agents themselves were started with
    for (const p of [plan1, work]) {
      const rec = JSON.parse(readFileSync(join(runDir, "artifacts", `${p.phase}.json`), "utf8")) as { argv: string[]; env: string[]; stdin: string };
      const shown = p.command as string[];
      // claude is found on PATH; the command agent's first two words are node and its script
      expect(normal(rec.argv), p.phase).toEqual(normal(shown.slice(shown[0] === "claude" ? 1 : 2)));
      expect(rec.stdin.length > 0, p.phase).toBe(p.stdin === "prompt");
      const said = new Set([...(p.env ?? []), ...(p.sandbox?.env ?? [])]);
      // what the fence keeps out, it keeps out
      for (const name of (p.sandbox as { withheld?: string[] } | undefined)?.withheld ?? []) expect(rec.env, `${p.phase}: ${name} kept out`).not.toContain(name);
      for (const name of said) expect(rec.env, `${p.phase}: ${name}`).toContain(name);
      // everything else it saw is what the run inherited (cli() adds CI and NO_COLOR to env)
      const inherited = new Set([...Object.keys(env), "CI", "NO_COLOR"]);
      const extra = rec.env.filter((n) => !inherited.has(n) && !said.has(n) && !ADDED_BY_SHELL.has(n));
      expect(extra, p.phase).toEqual([]);
    }
  }, 120_000);

  it("describes an ask phase by its question and wait, with no timeout or retry that does not apply", () => {
    write(dir, { "ask.yaml": `phaseloop: 1\nname: ask-it\nphases:\n  approve: { ask: "Approve {{ iteration }}?" }\n  go: { run: "true", next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n` });
    const text = cli(["run", "ask.yaml", "--dry-run"], dir, env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("approve — asks a person; waits as long as it takes");
    expect(text.stdout).toContain('approve: asks "Approve 1?", waits as long as it takes');
    expect(text.stdout).not.toMatch(/approve[^\n]*timeout 0s/);
    expect(text.stdout).not.toMatch(/approve[^\n]*retry/);
    const json = JSON.parse(cli(["run", "ask.yaml", "--dry-run", "--json"], dir, env).stdout) as Plan;
    expect(json.phases[0]).toEqual({ phase: "approve", kind: "ask", question: "Approve 1?" });
  });

  it("says whether the OS sandbox is here even when no phase of the run uses it", () => {
    write(dir, { "plain.yaml": `phaseloop: 1\nname: plain\nsandbox: off\nphases:\n  go: { run: "true", next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n` });
    const r = cli(["run", "plain.yaml", "--dry-run"], dir, env);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("no phase asks for one");
    const probe = spawnSync("bwrap", ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "true"]);
    if (probe.status === 0) expect(r.stdout).toContain("OS sandbox: available (linux); no phase of this run uses it");
    else expect(r.stdout).toMatch(/OS sandbox: not available here: .*; no phase of this run uses it/);
  });

  it("refuses --json without --dry-run", () => {
    const r = cli(["run", "plain.yaml", "--json"], dir, env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--json goes with --dry-run");
  });
});
