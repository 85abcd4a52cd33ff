// A workdir with runs worth looking at, made by the real CLI (dist/cli.cjs):
// an agent loop with a parallel group, tokens and cost (a scripted agent that
// speaks Claude Code's stream-json), a failed run, one waiting for an answer.
// Used by test/ui/screenshots.mjs and bench/ui.mjs.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const CLI = join(ROOT, "dist/cli.cjs");

const AGENT = `#!/usr/bin/env node
// plays an agent: a few lines of work, a changed file, usage and cost, and STATUS: COMPLETE on the third review
const fs = require("node:fs");
const role = process.env.PHASELOOP_PHASE;
const n = Number(fs.existsSync(".count-" + role) ? fs.readFileSync(".count-" + role, "utf8") : 0) + 1;
fs.writeFileSync(".count-" + role, String(n));
const say = (text) => console.log(JSON.stringify({ type: "assistant", message: { content: [{ type: "text", text }] } }));
const wait = (ms) => { const end = Date.now() + ms; while (Date.now() < end); };
say(role === "plan" ? "Reading TASK.md and the failing tests" : "Reviewing the diff of iteration " + n);
wait(Number(process.env.AGENT_MS || 150));
if (role === "plan") { fs.mkdirSync("src", { recursive: true }); fs.writeFileSync("src/parser-" + n + ".ts", "export const step = " + n + ";\\n"); say("Wrote src/parser-" + n + ".ts"); }
const done = role === "review" && n >= 3;
const text = role === "review" ? (done ? "All tests pass.\\nSTATUS: COMPLETE" : "Two tests still fail.\\nSTATUS: INCOMPLETE") : "Plan written.";
console.log(JSON.stringify({ type: "result", subtype: "success", is_error: false, result: text, num_turns: 3, usage: { input_tokens: 1800 + n * 250, output_tokens: 420 + n * 40 }, total_cost_usd: 0.011 + n * 0.004 }));
`;

export const DEMO = `phaseloop: 1
name: plan-check-review
agents:
  worker:
    command: [node, agent.cjs]
    output_format: claude-stream-json
phases:
  plan:
    agent: worker
    prompt: |
      Iteration {{ iteration }}. Read TASK.md and make the next failing test pass.
  checks:
    parallel: [lint, test]
    join: all_done
  lint:
    run: "echo linting src; sleep 0.1"
  test:
    run: "echo running 12 tests; sleep 0.2; test -f src/parser-2.ts || { echo '2 failing' >&2; exit 1; }"
  review:
    agent: worker
    prompt: |
      Review iteration {{ iteration }}. The tests said: {{ phases.test.status }}.
      End with STATUS: COMPLETE or STATUS: INCOMPLETE.
    output:
      status: { match: 'STATUS:\\s*(COMPLETE|INCOMPLETE)' }
    next:
      - if: output.status == 'COMPLETE'
        stop: complete
        reason: the reviewer found nothing left
      - goto: plan
stop: { max_iterations: 6 }
`;

const FAIL = `phaseloop: 1
name: release-build
phases:
  build:
    run: "echo compiling 48 files; echo 'src/index.ts:12:3 error TS2304: Cannot find name parse' >&2; exit 2"
    next:
      - if: status == 'failed'
        stop: failed
        reason: the build failed
stop: { max_iterations: 2 }
`;

const ASK = `phaseloop: 1
name: approve-plan
phases:
  plan:
    run: "echo '1. split the parser' > PLAN.md"
  approve:
    ask: "Review PLAN.md. Answer 'approve' or say what to change."
    next:
      - if: answer == 'approve'
        goto: build
      - goto: plan
  build:
    run: "echo built"
    next:
      - stop: complete
stop: { max_iterations: 3 }
`;

export const SLOW = `phaseloop: 1
name: slow-loop
phases:
  work:
    run: "for i in 1 2 3 4; do echo step $i of iteration {{ iteration }}; sleep 0.25; done"
  review:
    run: "echo reviewing; sleep 0.2"
    next:
      - if: exit_code == 7
        stop: complete
stop: { max_iterations: 200 }
`;

export function cli(args, cwd, env = {}) {
  return spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1", CI: "true", ...env } });
}

/** The run id a `run --reporter plain` printed. */
export function runIdOf(result) {
  return /run (\d{8}-\d{6}-\w+) started/.exec(result.stdout)?.[1];
}

export function makeDemoWorkdir(dir = mkdtempSync(join(tmpdir(), "phaseloop-demo-"))) {
  mkdirSync(dir, { recursive: true });
  const files = { "demo.yaml": DEMO, "fail.yaml": FAIL, "ask.yaml": ASK, "slow.yaml": SLOW, "agent.cjs": AGENT, "TASK.md": "# Make the parser tests pass\n", ".gitignore": "node_modules/\n.count-*\n" };
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  chmodSync(join(dir, "agent.cjs"), 0o755);
  const git = (...args) => spawnSync("git", ["-c", "user.email=demo@example.com", "-c", "user.name=demo", ...args], { cwd: dir });
  git("init", "-q");
  git("add", ".");
  git("commit", "-qm", "start");
  const runs = {};
  for (const [name, file] of [["fail", "fail.yaml"], ["ask", "ask.yaml"], ["demo", "demo.yaml"]]) {
    const r = cli(["run", file, "--reporter", "plain"], dir);
    runs[name] = runIdOf(r);
    if (!runs[name]) throw new Error(`run ${file}: ${r.stdout}${r.stderr}`);
  }
  return { dir, runs };
}
