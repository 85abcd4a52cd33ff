import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { checkMermaid } from "../machine/mermaid-check.ts";
import { cli, cliAsync, ensureBuilt, events, runDir, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const waitFor = async (check: () => boolean) => {
  for (let i = 0; i < 600 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
};
const lines = (dir: string, f: string) => readFileSync(join(dir, f), "utf8").trim().split("\n");
const jsonl = (path: string) => readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

/** A parent that runs analysis.yaml as its phase `analyse`, binding `area` from its own param, and stops on the child's outcome. */
const PARENT = `phaseloop: 1
name: parent
params:
  area: { type: string, default: api }
phases:
  plan: { run: "echo plan >> log.txt" }
  analyse:
    pipeline: ./flows/analysis.yaml
    params: { area: "{{ params.area }}-x", rounds: 2 }
    next:
      - if: "status == 'succeeded' && output.outcome == 'complete'"
        stop: complete
        reason: "child: {{ output.reason }}; looked: {{ output.phases.look.output.seen }}"
      - stop: blocked
        reason: "child {{ output.outcome }}: {{ output.reason }}"
stop: { max_iterations: 1 }
`;

const CHILD = (judge = 'echo judge >> log.txt') => `phaseloop: 1
name: analysis
params:
  area: { type: string }
  rounds: { type: integer, default: 1 }
phases:
  look:
    run: "echo look {{ params.area }} {{ params.rounds }} >> log.txt; echo seen={{ params.area }}"
    output: { seen: { match: 'seen=(\\S+)' } }
  judge:
    run: '${judge}'
    next:
      - if: "exit_code == 0"
        stop: complete
        reason: "{{ params.area }} judged"
      - stop: failed
        reason: "judge exited {{ exit_code }}"
stop: { max_iterations: 3 }
`;

describe("sub-pipelines end to end", () => {
  it("bound params reach the child; its outcome and outputs are the phase's result; its state is nested in the run folder", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT, "flows/analysis.yaml": CHILD() });
    expect(cli(["validate", "parent.yaml"], dir).code).toBe(0);
    const r = cli(["run", "parent.yaml", "--param", "area=billing", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(lines(dir, "log.txt")).toEqual(["plan", "look billing-x 2", "judge"]);
    const ev = events(dir);
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete", reason: { message: "child: billing-x judged; looked: billing-x" } });
    const started = ev.find((e) => e.type === "phase.started" && e.phase === "analyse");
    expect(started).toMatchObject({ kind: "pipeline", sub: "sub/0002-analyse" });
    expect(ev.find((e) => e.type === "phase.finished" && e.phase === "analyse")).toMatchObject({ status: "succeeded", output: { outcome: "complete", iterations: 1 } });
    // the child's own log, checkpoint and phase folders, nested
    const child = join(runDir(dir), "sub/0002-analyse");
    const childEvents = jsonl(join(child, "events.jsonl"));
    expect(childEvents[0]).toMatchObject({ type: "run.started", pipeline: "analysis", params: { area: "billing-x", rounds: 2 } });
    expect(childEvents.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
    expect(JSON.parse(readFileSync(join(child, "state.json"), "utf8")).snapshot.status).toBe("done");
    expect(readdirSync(join(child, "phases")).length).toBeGreaterThan(0);
    // the live view shows the child's phases under the parent's phase
    expect(r.stdout).toMatch(/analysis › iteration 1 · look succeeded/);
  });

  it("a failing child makes the phase fail with its outcome and reason, and the parent's rules decide", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT, "flows/analysis.yaml": CHILD("exit 4") });
    const r = cli(["run", "parent.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    const ev = events(dir);
    expect(ev.find((e) => e.type === "phase.finished" && e.phase === "analyse")).toMatchObject({ status: "failed", error: "pipeline_failed", output: { outcome: "failed", reason: "judge exited 4" } });
    expect(ev.at(-1)).toMatchObject({ type: "run.finished", outcome: "blocked", reason: { message: "child failed: judge exited 4" } });
  });

  it("params the child cannot take fail the phase before the child runs", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT.replace("rounds: 2", 'rounds: "{{ params.area }}"'), "flows/analysis.yaml": CHILD() });
    const r = cli(["run", "parent.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(3);
    const finished = events(dir).find((e) => e.type === "phase.finished" && e.phase === "analyse");
    expect(finished).toMatchObject({ status: "failed", error: "spawn_error" });
    expect(String(finished?.message)).toMatch(/param "rounds" must be a whole number/);
  });

  it.skipIf(process.platform === "win32")("SIGKILL inside the child, then resume: the child continues from its own checkpoint, its finished phases not run again", async () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT, "flows/analysis.yaml": CHILD('echo judge >> log.txt; if [ ! -f killed ]; then touch killed; sleep 30; fi') });
    const run = cliAsync(["run", "parent.yaml", "--reporter", "plain"], dir);
    await waitFor(() => existsSync(join(dir, "killed")));
    process.kill(run.child.pid!, "SIGKILL");
    await run.done;
    // the child is part of the pipeline: a changed child is a changed pipeline
    const child = readFileSync(join(dir, "flows/analysis.yaml"), "utf8");
    write(dir, { "flows/analysis.yaml": `${child}# changed\n` });
    const refused = cli(["resume", "--reporter", "plain"], dir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/flows\/analysis\.yaml changed/);
    write(dir, { "flows/analysis.yaml": child });
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    // plan and look ran once; judge was in flight and ran again
    expect(lines(dir, "log.txt")).toEqual(["plan", "look api-x 2", "judge", "judge"]);
    const childEvents = jsonl(join(runDir(dir), "sub/0002-analyse/events.jsonl"));
    expect(childEvents.filter((e) => e.type === "run.started")).toHaveLength(1);
    expect(childEvents.some((e) => e.type === "run.resumed")).toBe(true);
    expect(childEvents.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
    expect(readdirSync(join(runDir(dir), "sub"))).toEqual(["0002-analyse"]);
    expect(events(dir).at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
  }, 90_000);

  it.skipIf(process.platform === "win32")("SIGINT inside the child stops both with exit 130; resume finishes inside the child", async () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT, "flows/analysis.yaml": CHILD('echo judge >> log.txt; if [ ! -f killed ]; then touch killed; sleep 30; fi') });
    const run = cliAsync(["run", "parent.yaml", "--reporter", "plain"], dir);
    await waitFor(() => existsSync(join(dir, "killed")));
    process.kill(run.child.pid!, "SIGINT");
    expect((await run.done).code).toBe(130);
    expect(jsonl(join(runDir(dir), "sub/0002-analyse/events.jsonl")).at(-1)).toMatchObject({ type: "run.interrupted", phase: "judge" });
    const r = cli(["resume", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(lines(dir, "log.txt")).toEqual(["plan", "look api-x 2", "judge", "judge"]);
  }, 90_000);

  it("the child that runs is the one validated with its parent when the run started, even if its file changes while the run goes on", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT.replace('plan: { run: "echo plan >> log.txt" }', 'plan: { run: "echo plan >> log.txt; cp flows/failing.yaml flows/analysis.yaml" }'), "flows/analysis.yaml": CHILD(), "flows/failing.yaml": CHILD("exit 7") });
    const r = cli(["run", "parent.yaml", "--reporter", "plain"], dir);
    expect(r.stderr).toBe("");
    expect(readFileSync(join(dir, "flows/analysis.yaml"), "utf8")).toContain("exit 7");
    expect(r.code).toBe(0);
    expect(lines(dir, "log.txt")).toEqual(["plan", "look api-x 2", "judge"]);
    expect(events(dir).at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
  });

  it("a child may run a child of its own, nested in its folder", () => {
    const dir = tempDir();
    const inner = `phaseloop: 1\nname: inner\nparams: { word: { type: string } }\nphases:\n  say: { run: "echo inner {{ params.word }} >> log.txt", next: [{ stop: complete, reason: "said {{ params.word }}" }] }\nstop: { max_iterations: 1 }\n`;
    write(dir, {
      "parent.yaml": PARENT,
      "flows/analysis.yaml": CHILD().replace("  judge:\n", '  deeper: { pipeline: ./inner.yaml, params: { word: "{{ params.area }}" } }\n  judge:\n'),
      "flows/inner.yaml": inner,
    });
    expect(cli(["validate", "parent.yaml"], dir).code).toBe(0);
    const r = cli(["run", "parent.yaml", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(lines(dir, "log.txt")).toEqual(["plan", "look api-x 2", "inner api-x", "judge"]);
    const deepest = jsonl(join(runDir(dir), "sub/0002-analyse/sub/0002-deeper/events.jsonl"));
    expect(deepest.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete", reason: { message: "said api-x" } });
  });

  it("validate checks the child, locating its problems in its file with the chain; a cycle of pipelines is an error", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT, "flows/analysis.yaml": CHILD().replace("if: \"exit_code == 0\"", "if: \"exit_cod == 0\"") });
    const bad = cli(["validate", "parent.yaml"], dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^flows\/analysis\.yaml:13:14: error EXPR_UNKNOWN_NAME /m);
    expect(bad.stderr).toContain('note: run by phase "analyse" of parent.yaml (parent.yaml:8:15)');
    write(dir, { "flows/analysis.yaml": CHILD().replace("  look:\n", "  again: { pipeline: ../parent.yaml, params: { area: x } }\n  look:\n") });
    const cycle = cli(["validate", "parent.yaml"], dir);
    expect(cycle.code).toBe(2);
    expect(cycle.stderr).toMatch(/^flows\/analysis\.yaml:7:\d+: error SUB_PIPELINE_CYCLE phase "again" runs a pipeline that leads back to itself: parent\.yaml → analysis\.yaml → parent\.yaml/m);
    const run = cli(["run", "parent.yaml"], dir);
    expect(run.code).toBe(2);
  });

  it("graph shows the child as one node; graph --expand draws its phases as a subgraph", () => {
    const dir = tempDir();
    write(dir, { "parent.yaml": PARENT, "flows/analysis.yaml": CHILD() });
    const one = cli(["graph", "parent.yaml"], dir);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/p_analyse\["analyse · pipeline \.\/flows\/analysis\.yaml"\]/);
    expect(one.stdout).not.toContain("p_analyse__");
    const open = cli(["graph", "parent.yaml", "--expand"], dir);
    expect(open.code).toBe(0);
    expect(checkMermaid(open.stdout)).toEqual([]);
    expect(open.stdout).toMatch(/subgraph p_analyse__sub\["analyse: analysis"\]/);
    expect(open.stdout).toMatch(/p_analyse__p_judge -->\|"exit_code == 0"\| p_analyse__complete/);
    const dot = cli(["graph", "parent.yaml", "--expand", "--format", "dot"], dir);
    expect(dot.stdout).toMatch(/subgraph cluster_p_analyse__sub \{/);
  });
});
