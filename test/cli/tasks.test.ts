import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, ensureBuilt, events, git, tempDir, write } from "./cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const PRD = {
  userStories: [
    { id: "US-001", title: "Add login", priority: 2, passes: false },
    { id: "US-002", title: "Add logout", priority: 1, passes: false, depends_on: ["US-001"] },
    { id: "US-003", title: "Write the docs", priority: 3, passes: true },
    { id: "US-004", title: "Add a footer", priority: 4, passes: false },
  ],
};

/** A queue over prd.json: the agent writes the task's file (after WAIT_FOR, if set), a check marks the task done. */
const PIPELINE = `phaseloop: 1
name: queue
agents:
  worker:
    command: [sh, -c, 'touch started; while [ -n "$WAIT_FOR" ] && [ ! -f "$WAIT_FOR" ]; do sleep 0.05; done; echo "$1" > "out-$1.txt"; echo wrote "$1"', sh, "{{ task.id }}"]
    prompt_via: stdin
    # an agent gets the variables the pipeline names, not the whole environment
    env: { WAIT_FOR: "{{ env.WAIT_FOR ? env.WAIT_FOR : '' }}" }
tools:
  all: { read: ["**"], write: ["**"] }
tasks:
  source: { file: prd.json, pointer: /userStories, fields: { done: passes }, write_back: true }
  final_gate: gate
phases:
  work:
    agent: worker
    tools: all
    prompt: "Implement {{ task.id }}: {{ task.title }}"
  check:
    run: "test -f out-{{ task.id }}.txt"
    next:
      - if: exit_code == 0
        task: done
        goto: work
      - goto: work
  gate:
    run: "touch gate-ran"
stop: { max_iterations: 6 }
`;

const PLAIN = "phaseloop: 1\nname: plain\nphases:\n  a: { run: \"true\", next: [{ stop: complete }] }\nstop: { max_iterations: 1 }\n";

function queueDir(): string {
  const dir = tempDir();
  write(dir, { "p.yaml": PIPELINE, "prd.json": JSON.stringify(PRD, null, 2) });
  return dir;
}

const stories = (dir: string) => (JSON.parse(readFileSync(join(dir, "prd.json"), "utf8")) as typeof PRD).userStories;

describe("phaseloop tasks", () => {
  it("prints the queue as a table in the order it is worked: ready, waiting, done", () => {
    const dir = queueDir();
    const r = cli(["tasks", "p.yaml"], dir);
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+PRIORITY\s+STATUS\s+DEPENDS ON\s+TITLE$/);
    expect(lines.slice(1).map((l) => l.split(/\s{2,}/))).toEqual([
      ["US-002", "1", "waiting", "US-001", "Add logout"],
      ["US-001", "2", "ready", "-", "Add login"],
      ["US-003", "3", "done", "-", "Write the docs"],
      ["US-004", "4", "ready", "-", "Add a footer"],
    ]);
  });

  it("--ready --json is one line of JSON: the tasks that can start now, as a matrix input", () => {
    const dir = queueDir();
    const r = cli(["tasks", "p.yaml", "--ready", "--json"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split("\n")).toHaveLength(1);
    expect(JSON.parse(r.stdout)).toEqual([
      { id: "US-001", title: "Add login", priority: 2, depends_on: [], status: "pending", ready: true, reason: null, slug: "US-001" },
      { id: "US-004", title: "Add a footer", priority: 4, depends_on: [], status: "pending", ready: true, reason: null, slug: "US-004" },
    ]);
    const all = JSON.parse(cli(["tasks", "p.yaml", "--json"], dir).stdout) as { id: string; status: string; ready: boolean }[];
    expect(all.map((t) => [t.id, t.status, t.ready])).toEqual([
      ["US-002", "pending", false],
      ["US-001", "pending", true],
      ["US-003", "done", false],
      ["US-004", "pending", true],
    ]);
  });

  it("reads the task files from --workdir, and says so when nothing is ready", () => {
    const dir = queueDir();
    const work = join(dir, "w");
    write(work, { "prd.json": JSON.stringify({ userStories: [{ id: "a", title: "A", passes: true }] }) });
    expect(JSON.parse(cli(["tasks", "p.yaml", "--ready", "--json", "--workdir", "w"], dir).stdout)).toEqual([]);
    expect(cli(["tasks", "p.yaml", "--ready", "--workdir", work], dir).stdout).toBe("no task is ready\n");
  });

  it("a markdown queue: dependencies from front matter and comments, ids from file names", () => {
    const dir = tempDir();
    write(dir, {
      "p.yaml": PIPELINE.replace("source: { file: prd.json, pointer: /userStories, fields: { done: passes }, write_back: true }", 'source: { glob: "tasks/*.md" }'),
      "tasks/01-schema.md": "---\nstatus: done\n---\n# Database schema\n",
      "tasks/02-api.md": "---\ndepends_on: [01-schema]\n---\n# The API\n",
      "tasks/03-ui.md": "# The UI\n<!-- depends_on: 02-api -->\n",
    });
    const rows = JSON.parse(cli(["tasks", "p.yaml", "--json"], dir).stdout) as { id: string; title: string; ready: boolean }[];
    expect(rows.map((t) => [t.id, t.title, t.ready])).toEqual([
      ["01-schema", "Database schema", false],
      ["02-api", "The API", true],
      ["03-ui", "The UI", false],
    ]);
  });

  it("an invalid pipeline is a located error, a pipeline without tasks and a bad task source exit 2", () => {
    const dir = queueDir();
    write(dir, { "bad.yaml": PIPELINE.replace("stop: { max_iterations: 6 }", "stop: { max_iterations: 6, nonsense: 1 }"), "plain.yaml": PLAIN });
    const bad = cli(["tasks", "bad.yaml"], dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^bad\.yaml:\d+:\d+: error SCHEMA/m);
    const plain = cli(["tasks", "plain.yaml"], dir);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain("plain.yaml has no task queue");
    write(dir, { "prd.json": "{ not json" });
    const source = cli(["tasks", "p.yaml"], dir);
    expect(source.code).toBe(2);
    expect(source.stderr).toMatch(/^p\.yaml:12:11: error TASK_SOURCE prd\.json is not valid JSON/m);
    expect(cli(["tasks"], dir).code).toBe(2);
    expect(cli(["tasks", "p.yaml", "--bogus"], dir).stderr).toContain('unknown option "--bogus"');
  });
});

describe("phaseloop run --task", () => {
  it("runs one task's loop, writes it back and stops complete without the final gate", () => {
    const dir = queueDir();
    const r = cli(["run", "p.yaml", "--task", "US-004", "--reporter", "plain"], dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("run complete: task US-004 is done");
    expect(existsSync(join(dir, "out-US-004.txt"))).toBe(true);
    expect(existsSync(join(dir, "out-US-001.txt"))).toBe(false);
    expect(existsSync(join(dir, "gate-ran"))).toBe(false);
    expect(stories(dir).map((s) => s.passes)).toEqual([false, false, true, true]);
    const ev = events(dir);
    expect(ev[0]).toMatchObject({ type: "run.started", task: "US-004" });
    expect(ev.filter((e) => e.type === "iteration.started").map((e) => e.task)).toEqual(["US-004"]);
    // the queue moves on: US-001 is still ready, US-002 still waits for it
    expect((JSON.parse(cli(["tasks", "p.yaml", "--ready", "--json"], dir).stdout) as { id: string }[]).map((t) => t.id)).toEqual(["US-001"]);
    const dep = cli(["run", "p.yaml", "--task", "US-001", "--reporter", "plain"], dir);
    expect(dep.code).toBe(0);
    expect((JSON.parse(cli(["tasks", "p.yaml", "--ready", "--json"], dir).stdout) as { id: string }[]).map((t) => t.id)).toEqual(["US-002"]);
  });

  it("an unknown task is exit 2 with a did-you-mean; a task whose dependencies are not done is exit 2; nothing runs", () => {
    const dir = queueDir();
    const unknown = cli(["run", "p.yaml", "--task", "US-01", "--reporter", "plain"], dir);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no task "US-01" in the queue');
    expect(unknown.stderr).toContain('did you mean "US-001"?');
    const waiting = cli(["run", "p.yaml", "--task", "US-002", "--reporter", "plain"], dir);
    expect(waiting.code).toBe(2);
    expect(waiting.stderr).toContain('task "US-002" depends on "US-001" (pending), not done yet');
    expect(existsSync(join(dir, ".phaseloop/runs"))).toBe(false);
    expect(cli(["run", "p.yaml", "--task"], dir).code).toBe(2);
    write(dir, { "plain.yaml": PLAIN });
    const none = cli(["run", "plain.yaml", "--task", "x"], dir);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("--task needs a pipeline with a task queue");
  });

  it("an interrupted --task run resumes with the same task only", async () => {
    const dir = queueDir();
    git(dir, "init", "-q");
    const run = cliAsync(["run", "p.yaml", "--task", "US-004", "--reporter", "plain"], dir, { WAIT_FOR: "go" });
    for (let i = 0; i < 600 && !existsSync(join(dir, "started")); i++) await new Promise((r) => setTimeout(r, 50));
    process.kill(run.child.pid!, "SIGTERM");
    expect((await run.done).code).toBe(130);
    write(dir, { go: "" });
    const resumed = cli(["resume", "--reporter", "plain"], dir, { WAIT_FOR: "go" });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain("run complete: task US-004 is done");
    expect(stories(dir).map((s) => s.passes)).toEqual([false, false, true, true]);
    expect(existsSync(join(dir, "out-US-001.txt"))).toBe(false);
    expect(existsSync(join(dir, "gate-ran"))).toBe(false);
  }, 60_000);
});
