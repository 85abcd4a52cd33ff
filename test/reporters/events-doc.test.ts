import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { RunEventType } from "../../src/run/run-events.ts";
import { cli, ensureBuilt, git, runDir, tempDir, write } from "../cli/cli-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

// A Record over the union: adding an event type without listing it here fails to type-check.
const TYPES: Record<RunEventType, true> = {
  "run.started": true,
  "run.resumed": true,
  "iteration.started": true,
  "phase.started": true,
  "phase.output": true,
  "phase.skipped": true,
  "phase.finished": true,
  "phase.retry": true,
  "policy.violation": true,
  "sandbox.refused": true,
  "hook.finished": true,
  "iteration.finished": true,
  "task.updated": true,
  "question.asked": true,
  "question.answered": true,
  "note": true,
  "run.interrupted": true,
  "run.finished": true,
  "lane.started": true,
  "lane.finished": true,
  "lane.interrupted": true,
  "lane.merged": true,
  "lane.conflict": true,
  "lane.blocked": true,
};

const DOC = readFileSync(new URL("../../docs/events.md", import.meta.url), "utf8");
const BASE = ["v", "seq", "at", "run", "type"];

/** The fields docs/events.md lists under each event type: name → optional. */
function documentedFields(): Map<string, Map<string, boolean>> {
  const out = new Map<string, Map<string, boolean>>();
  for (const section of DOC.split(/^### /m).slice(1)) {
    const type = /^`([a-z.]+)`/.exec(section)?.[1];
    if (type === undefined) continue;
    const fields = new Map<string, boolean>();
    for (const m of section.matchAll(/^\| `([a-z_]+)` \| ([^|]*)\|/gm)) fields.set(m[1]!, /optional/.test(m[2]!));
    out.set(type, fields);
  }
  return out;
}

const PIPELINE = `phaseloop: 1
name: events-doc
agents:
  scribe: { command: [sh, -c, "cat > /dev/null; echo hello; echo oops >&2; echo x > outside.txt; echo y > src/in.txt"] }
tools:
  narrow: { read: ["**"], write: ["src/**"], on_violation: warn }
hooks:
  before_iteration: "true"
phases:
  write:
    agent: scribe
    tools: narrow
    prompt: "Write the files now."
  flaky:
    run: "if [ -f .flaky ]; then exit 0; fi; touch .flaky; exit 7"
    retry: { max_attempts: 2, on: [exit_nonzero], interval: 10ms }
  never:
    when: iteration > 5
    run: "true"
  check:
    run: "test -f src/in.txt"
    next:
      - if: exit_code == 0 && iteration >= 2
        stop: complete
      - goto: write
stop:
  max_iterations: 3
  no_progress: 3
`;

describe("docs/events.md", () => {
  it("documents every event type", () => {
    for (const type of Object.keys(TYPES)) expect(DOC).toContain(`### \`${type}\``);
  });

  it("documents exactly the fields a real run emits, on --reporter json and in events.jsonl", () => {
    const dir = tempDir();
    mkdirSync(join(dir, "src"));
    write(dir, { "p.yaml": PIPELINE });
    git(dir, "init", "-q");
    // the check after the phase (policy.violation with on_violation: warn): in the OS sandbox the stray write would be refused instead
    const r = cli(["run", "p.yaml", "--reporter", "json", "--sandbox", "off"], dir);
    expect(r.code).toBe(0);
    const live = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const logged = readFileSync(join(runDir(dir), "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    const seen = new Set(live.map((e) => e.type));
    for (const type of ["run.started", "iteration.started", "phase.started", "phase.output", "phase.skipped", "phase.finished", "phase.retry", "policy.violation", "hook.finished", "iteration.finished", "run.finished"]) expect(seen).toContain(type);
    const docs = documentedFields();
    for (const event of [...live, ...logged]) {
      const fields = docs.get(event.type as string);
      expect(fields, `${String(event.type)} is documented`).toBeDefined();
      for (const key of Object.keys(event)) if (!BASE.includes(key)) expect(fields!.has(key), `${String(event.type)}.${key} is documented`).toBe(true);
      for (const [key, optional] of fields!) if (!optional) expect(event, `${String(event.type)} has ${key}`).toHaveProperty(key);
    }
    // live output lines are not logged and carry seq 0, as documented
    expect(logged.some((e) => e.type === "phase.output")).toBe(false);
    expect(live.filter((e) => e.type === "phase.output").every((e) => e.seq === 0)).toBe(true);
    expect(DOC).toMatch(/`phase\.output` lines[^|]*`seq` 0/);
    // run.started names the file as an absolute path; phase runs that wrote something have their folder
    expect(live[0]).toMatchObject({ type: "run.started", file: join(dir, "p.yaml") });
    const started = live.filter((e) => e.type === "phase.started" && e.kind === "agent");
    for (const e of started) expect(existsSync(join(runDir(dir), "phases", e.dir as string, "prompt.md"))).toBe(true);
    // notes the docs describe are ones a run can emit
    expect(DOC).not.toMatch(/budget nearly spent/i);
  });
});
