/**
 * What a phase brings to its agent, end to end with command agents and the real CLI: the
 * model (a tier or a name) in PHASELOOP_MODEL and in the run's records, the run's artifacts
 * folder (writable in the OS sandbox, out of the measured changes), and sessions continued.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt, events, git, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

/** A command agent that says what it was given. */
const SAY = `#!/bin/sh
cat > /dev/null
echo "model=$PHASELOOP_MODEL session=$PHASELOOP_SESSION phase=$PHASELOOP_PHASE"
`;

describe("model per phase", () => {
  it("passes the phase's model (a tier mapped, or a name) and records it in run.json, the events and output.json", () => {
    const dir = tempDir();
    write(dir, {
      "say.sh": SAY,
      "p.yaml": `phaseloop: 1
name: models
agents:
  worker: { command: [./say.sh], model: base-model, models: { small: tiny-1, large: huge-2 } }
phases:
  plan: { agent: worker, model: small, prompt: plan }
  build: { agent: worker, model: exact-model-9, prompt: build }
  review: { agent: worker, prompt: review, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`,
    });
    const r = cli(["run", "p.yaml", "--reporter", "plain", "--sandbox", "off"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("model=tiny-1 ");
    expect(r.stdout).toContain("model=exact-model-9 ");
    expect(r.stdout).toContain("model=base-model ");
    const info = JSON.parse(readFileSync(join(runDir(dir), "run.json"), "utf8"));
    expect(info.models).toEqual({ plan: "tiny-1", build: "exact-model-9", review: "base-model" });
    const started = events(dir).filter((e) => e.type === "phase.started");
    expect(started.map((e) => [e.phase, e.model, e.model_tier])).toEqual([["plan", "tiny-1", "small"], ["build", "exact-model-9", undefined], ["review", "base-model", undefined]]);
    const out = JSON.parse(readFileSync(join(runDir(dir), "phases/0001-plan/output.json"), "utf8"));
    expect(out.model).toBe("tiny-1");
    expect(readFileSync(join(runDir(dir), "summary.md"), "utf8")).toContain("| Models | plan: `tiny-1`, build: `exact-model-9`, review: `base-model` |");
  });

  it("validate: a model on a run phase is refused; a near-miss tier is a located warning", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: models
agents:
  worker: { command: [cat], models: { small: tiny-1 } }
phases:
  plan: { agent: worker, model: smal, prompt: plan }
  test: { run: "true", next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`,
      "q.yaml": `phaseloop: 1
name: models
phases:
  test: { run: "true", model: small, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`,
    });
    const r = cli(["validate", "p.yaml"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/p\.yaml:6:\d+: warning MODEL_TIER "smal" is not a tier of agent "worker": it is passed as a model name/);
    const q = cli(["validate", "q.yaml"], dir);
    expect(q.code).toBe(2);
    expect(q.stdout + q.stderr).toMatch(/q\.yaml:4:\d+: error SCHEMA_UNKNOWN_KEY "model" is not allowed/);
  });
});

describe("the artifacts folder", () => {
  it("is writable by every phase in the OS sandbox, readable by later phases, out of the measured changes, listed in summary.md", () => {
    const dir = tempDir();
    write(dir, {
      "src/a.txt": "a\n",
      "p.yaml": `phaseloop: 1
name: artifacts
agents:
  scribe: { command: [sh, -c, 'cat > /dev/null; echo "findings" > "$PHASELOOP_ARTIFACTS/security.md"; echo wrote'] }
  free: { command: [sh, -c, 'cat > /dev/null; mkdir -p "$PHASELOOP_ARTIFACTS/deep"; echo more > "$PHASELOOP_ARTIFACTS/deep/b.txt"'] }
tools:
  reading: { read: ["**"] }
phases:
  review: { agent: scribe, tools: reading, prompt: "Write findings to {{ run.artifacts }}/security.md" }
  other: { agent: free, prompt: more }
  use:
    run: 'cat {{ run.artifacts }}/security.md'
    output: { found: { match: "(findings)" } }
    next: [{ if: "output.found == 'findings' && len(changes) == 0", stop: complete }, { stop: failed }]
stop: { max_iterations: 1 }
`,
    });
    git(dir, "init", "-q");
    git(dir, "add", "-A");
    git(dir, "commit", "-qm", "base");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const run = runDir(dir);
    expect(readFileSync(join(run, "artifacts/security.md"), "utf8")).toBe("findings\n");
    const started = events(dir).filter((e) => e.type === "phase.started");
    // the agent phases did run in the OS sandbox, where available
    if (started[0]!.sandbox === true) expect(started[1]!.sandbox).toBe(true);
    const md = readFileSync(join(run, "summary.md"), "utf8");
    expect(md).toContain("## Artifacts");
    expect(md).toContain("- `security.md` (9 bytes)");
    expect(md).toContain("- `deep/b.txt` (5 bytes)");
    expect(JSON.parse(readFileSync(join(run, "run.json"), "utf8")).artifacts).toMatch(/^\.phaseloop\/runs\/[^/]+\/artifacts$/);
  });
});

describe("the artifacts folder in the OS sandbox", () => {
  it("opens nothing else of the run's state: a write beside it is refused, nothing beside it is writable, and the phase fails", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: artifacts-escape
agents:
  sneaky: { command: [sh, -c, 'cat > /dev/null; echo ok > "$PHASELOOP_ARTIFACTS/fine.txt"; echo x > "$PHASELOOP_ARTIFACTS/../planted.json"; echo x >> "$PHASELOOP_ARTIFACTS/../events.jsonl"; echo x > "$PHASELOOP_ARTIFACTS/../../../lock"; true'] }
phases:
  go: { agent: sneaky, prompt: go, sandbox: required, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`,
    });
    git(dir, "init", "-q");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], dir);
    if (/requires an OS sandbox|SANDBOX_UNAVAILABLE/.test(r.stdout + r.stderr)) return; // no sandbox on this machine
    expect(r.code, r.stdout + r.stderr).toBe(3);
    const run = runDir(dir);
    expect(readFileSync(join(run, "artifacts/fine.txt"), "utf8")).toBe("ok\n");
    expect(existsSync(join(run, "planted.json"))).toBe(false);
    expect(readFileSync(join(run, "events.jsonl"), "utf8")).not.toMatch(/^x$/m);
    const finished = events(dir).find((e) => e.type === "phase.finished")!;
    expect(finished.error).toBe("policy_violation");
    expect(String(finished.message)).toContain("planted.json");
    expect(String(finished.message)).toContain("events.jsonl");
    expect(String(finished.message)).toContain(".phaseloop/lock");
  });
});

/** A command agent speaking claude's event stream: it continues PHASELOOP_SESSION when given one (keeping its id), else starts "s-PHASE". */
const SESSIONED = `#!/bin/sh
cat > /dev/null
sid="\${PHASELOOP_SESSION:-s-$PHASELOOP_PHASE}"
if [ -n "$CRASH_IN" ] && [ "$CRASH_IN" = "$PHASELOOP_PHASE" ] && [ ! -f .crashed ]; then touch .crashed; kill -9 $PPID; sleep 5; fi
printf '{"type":"system","subtype":"init","session_id":"%s"}\\n' "$sid"
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"%s continued [%s]"}]}}\\n' "$PHASELOOP_PHASE" "$PHASELOOP_SESSION"
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s continued [%s]","session_id":"%s"}\\n' "$PHASELOOP_PHASE" "$PHASELOOP_SESSION" "$sid"
`;

const SESSIONS = `phaseloop: 1
name: sessions
agents:
  worker: { command: [sh, ./agent.sh], output_format: claude-stream-json }
  other: { command: [sh, ./agent.sh], output_format: claude-stream-json }
phases:
  plan: { agent: worker, prompt: plan }
  build: { agent: worker, session: continue, prompt: build }
  review: { agent: other, prompt: review }
  fix: { agent: other, session: { continue: plan }, prompt: fix }
  again: { agent: other, session: continue, prompt: again, next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;

describe("sessions", () => {
  it("fresh by default; continue takes the agent's latest, continue: PHASE that phase's; each recorded in the events and output.json", () => {
    const dir = tempDir();
    write(dir, { "agent.sh": SESSIONED, "p.yaml": SESSIONS });
    const r = cli(["run", "p.yaml", "--reporter", "plain", "--sandbox", "off"], dir);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("plan continued []");
    expect(r.stdout).toContain("build continued [s-plan]");
    expect(r.stdout).toContain("review continued []");
    expect(r.stdout).toContain("fix continued [s-plan]");
    // other's latest session is the one fix continued
    expect(r.stdout).toContain("again continued [s-plan]");
    const started = events(dir).filter((e) => e.type === "phase.started");
    expect(started.map((e) => e.continued_session)).toEqual([null, "s-plan", null, "s-plan", "s-plan"]);
    const out = JSON.parse(readFileSync(join(runDir(dir), "phases/0003-review/output.json"), "utf8"));
    expect(out.session_id).toBe("s-review");
  });

  it("a run killed in the middle of a continued session continues the same session when resumed", () => {
    const dir = tempDir();
    write(dir, { "agent.sh": SESSIONED, "p.yaml": SESSIONS });
    const first = cli(["run", "p.yaml", "--reporter", "plain", "--sandbox", "off"], dir, { CRASH_IN: "build" });
    expect(first.code).not.toBe(0);
    expect(existsSync(join(dir, ".crashed"))).toBe(true);
    const state = JSON.parse(readFileSync(join(runDir(dir), "state.json"), "utf8"));
    expect(state.snapshot.sessions.phases.plan).toBe("s-plan");
    const again = cli(["resume", "--reporter", "plain", "--sandbox", "off"], dir);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toContain("build continued [s-plan]");
    expect(again.stdout).toContain("fix continued [s-plan]");
  });

  it("validate: aider cannot continue a session, a text command agent is warned about, continue: PHASE names an agent phase of the same kind", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": `phaseloop: 1
name: sessions
agents:
  helper: { preset: aider }
  texty: { command: [cat] }
  coder: { preset: codex }
phases:
  a: { agent: helper, prompt: a, session: continue }
  b: { agent: texty, prompt: b, session: continue }
  c: { agent: coder, prompt: c, session: { continue: b } }
  d: { agent: coder, prompt: d, session: { continue: nope } }
  e: { run: "true", next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`,
    });
    const r = cli(["validate", "p.yaml"], dir);
    const text = r.stdout + r.stderr;
    expect(r.code).toBe(2);
    expect(text).toMatch(/p\.yaml:8:\d+: error SESSION_UNSUPPORTED phase "a" continues a session, but aider keeps no session/);
    expect(text).toMatch(/p\.yaml:9:\d+: warning SESSION_UNSUPPORTED phase "b" continues a session, but a command agent with text output reports no session id/);
    expect(text).toMatch(/p\.yaml:10:\d+: error SESSION_MISMATCH phase "b" runs command \(agent "texty"\), phase "c" runs codex/);
    expect(text).toMatch(/p\.yaml:11:\d+: error UNKNOWN_PHASE unknown phase "nope"/);
  });
});
