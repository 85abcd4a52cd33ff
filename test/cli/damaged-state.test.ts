/**
 * Damaged run state is an input error, never a crash: every file of an
 * interrupted run (and the workdir lock) is damaged at random, then `status`,
 * `logs`, `resume` and `run` must end with an exit code and a message, not an
 * exception (the CLI's INTERNAL). A refused resume changes no file.
 */
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { main as logsMain } from "../../src/commands/logs.ts";
import { main as resumeMain } from "../../src/commands/resume.ts";
import { main as runMain } from "../../src/commands/run.ts";
import { main as statusMain } from "../../src/commands/status.ts";
import type { CliIo } from "../../src/commands/cli-io.ts";
import { cliAsync, ensureBuilt, write } from "./cli-helpers.ts";
import { logViolations, readRunFiles } from "./crash-points.ts";

const PIPELINE = `phaseloop: 1
name: damage
params:
  word: { type: string, default: x }
  level: { type: integer, default: 2, enum: [1, 2] }
phases:
  change:
    run: [sh, -c, 'echo "$PHASELOOP_ITERATION {{ params.word }}{{ params.level }}" >> work.txt']
  hold:
    run: [sh, -c, 'if [ -f hold ] && [ "$PHASELOOP_ITERATION" = 2 ]; then echo holding; sleep 60; fi; echo ok']
    output:
      said: { match: '(ok)' }
    next:
      - if: iteration >= 3
        stop: complete
      - goto: change
stop:
  max_iterations: 4
  no_progress: 3
`;

const STATE_FILES = ["run.json", "state.json", "events.jsonl", "iterations.jsonl", "baseline.json", "phases", "summary.md", "state.json.next", "state.journal"] as const;
type Target = (typeof STATE_FILES)[number] | "lock";

/** A workdir holding one run interrupted in its second iteration. */
let template: string;
let runId: string;

beforeAll(async () => {
  ensureBuilt();
  template = mkdtempSync(join(tmpdir(), "phaseloop-damage-"));
  write(template, { "p.yaml": PIPELINE, hold: "" });
  const run = cliAsync(["run", "p.yaml", "--reporter", "plain"], template);
  for (let i = 0; i < 600 && !run.output().includes("│ holding"); i++) await new Promise((r) => setTimeout(r, 50));
  process.kill(run.child.pid!, "SIGTERM");
  const r = await run.done;
  expect(r.code).toBe(130);
  rmSync(join(template, "hold"));
  runId = readdirSync(join(template, ".phaseloop/runs"))[0]!;
  // a lock left by a process that is gone
  writeFileSync(join(template, ".phaseloop/lock"), JSON.stringify({ pid: 999_999_999, run_id: runId, host: readFileSync("/proc/sys/kernel/hostname", "utf8").trim(), started_at: new Date().toISOString() }) + "\n");
}, 60_000);

function pathOf(dir: string, target: Target): string {
  return target === "lock" ? join(dir, ".phaseloop/lock") : join(dir, ".phaseloop/runs", runId, target);
}

// ── damage ─────────────────────────────────────────────────────────────────

type JsonEdit = { picks: number[]; value: unknown; remove: boolean };
type Damage =
  | { kind: "truncate"; at: number }
  | { kind: "replace"; text: string }
  | { kind: "edit"; line: number; edit: JsonEdit }
  | { kind: "lines"; op: "delete" | "duplicate" | "swap" | "garbage"; line: number; other: number }
  | { kind: "directory" }
  | { kind: "symlink"; to: string }
  | { kind: "remove" };

const oddValue = fc.oneof(
  fc.constantFrom<unknown>(null, {}, [], -1, 0, 1.5, 1e300, "", "nope", true, [1, "x"], { kind: "phase", phase: "nope", attempt: 1, seq: 1 }, { kind: "nope" }, "done", "complete"),
  fc.jsonValue({ maxDepth: 2 }),
);

const damage: fc.Arbitrary<Damage> = fc.oneof(
  fc.integer({ min: 0, max: 1000 }).map((n): Damage => ({ kind: "truncate", at: n / 1000 })),
  fc.oneof(fc.constantFrom("", "{}", "[]", "null", "42", '"x"', "\0\0\0", "{\n", '{"snapshot": 1}', '{"snapshot":{},"seq":1,"pending":[]}'), fc.string({ maxLength: 40 })).map((text): Damage => ({ kind: "replace", text })),
  fc.record({ line: fc.nat(), edit: fc.record({ picks: fc.array(fc.nat(), { minLength: 1, maxLength: 6 }), value: oddValue, remove: fc.boolean() }) }).map((e): Damage => ({ kind: "edit", ...e })),
  fc.record({ op: fc.constantFrom("delete", "duplicate", "swap", "garbage"), line: fc.nat(), other: fc.nat() }).map((e): Damage => ({ kind: "lines", ...(e as { op: "delete"; line: number; other: number }) })),
  fc.constant<Damage>({ kind: "directory" }),
  fc.constantFrom("/nonexistent/phaseloop", "/", "/dev/null").map((to): Damage => ({ kind: "symlink", to })),
  fc.constant<Damage>({ kind: "remove" }),
);

/** Walks down `picks` (a child chosen by index at each level) and replaces or removes what it reaches. */
function editJson(root: unknown, edit: JsonEdit): unknown {
  if (root === null || typeof root !== "object") return edit.value;
  let parent = root as Record<string, unknown>;
  for (let i = 0; i < edit.picks.length; i++) {
    const keys = Object.keys(parent);
    if (keys.length === 0) break;
    const key = keys[edit.picks[i]! % keys.length]!;
    const child = parent[key];
    const last = i === edit.picks.length - 1 || child === null || typeof child !== "object";
    if (last) {
      if (edit.remove && !Array.isArray(parent)) delete parent[key];
      else parent[key] = edit.value;
      return root;
    }
    parent = child as Record<string, unknown>;
  }
  return root;
}

function applyDamage(path: string, d: Damage): void {
  // a directory (phases/) damaged as a file becomes one
  if (existsSync(path) && lstatSync(path).isDirectory() && !["directory", "symlink", "remove"].includes(d.kind)) rmSync(path, { recursive: true });
  const text = existsSync(path) && lstatSync(path).isFile() ? readFileSync(path, "utf8") : "";
  const jsonl = path.endsWith(".jsonl") || path.endsWith(".journal");
  const lines = text.split("\n").filter((l) => l !== "");
  switch (d.kind) {
    case "truncate":
      writeFileSync(path, text.slice(0, Math.floor(text.length * d.at)));
      return;
    case "replace":
      writeFileSync(path, d.text);
      return;
    case "edit": {
      if (jsonl) {
        if (lines.length === 0) return;
        const i = d.line % lines.length;
        lines[i] = JSON.stringify(editJson(JSON.parse(lines[i]!), d.edit)) ?? "null";
        writeFileSync(path, lines.join("\n") + "\n");
      } else {
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch {
          value = {};
        }
        writeFileSync(path, JSON.stringify(editJson(value, d.edit)) ?? "null");
      }
      return;
    }
    case "lines": {
      if (lines.length === 0) return;
      const i = d.line % lines.length;
      const j = d.other % lines.length;
      if (d.op === "delete") lines.splice(i, 1);
      else if (d.op === "duplicate") lines.splice(i, 0, lines[i]!);
      else if (d.op === "swap") [lines[i], lines[j]] = [lines[j]!, lines[i]!];
      else lines.splice(i, 0, '{"v":1,"seq":');
      writeFileSync(path, lines.join("\n") + (lines.length ? "\n" : ""));
      return;
    }
    case "directory":
      rmSync(path, { force: true, recursive: true });
      mkdirSync(path);
      writeFileSync(join(path, "inside"), "x");
      return;
    case "symlink":
      rmSync(path, { force: true, recursive: true });
      symlinkSync(d.to, path);
      return;
    case "remove":
      rmSync(path, { force: true, recursive: true });
      return;
  }
}

// ── running the commands in-process ──────────────────────────────────────

interface Ran {
  code: number;
  out: string;
  err: string;
}

async function invoke(main: (argv: string[], io: CliIo) => Promise<number>, argv: string[], cwd: string): Promise<Ran> {
  let out = "";
  let err = "";
  const io: CliIo = { stdout: (t) => void (out += t), stderr: (t) => void (err += t), isTTY: false, color: false, env: { PATH: process.env.PATH, HOME: process.env.HOME }, cwd };
  let code: number;
  try {
    code = await main(argv, io);
  } catch (error) {
    // what the CLI would print as INTERNAL
    throw new Error(`phaseloop ${argv[0] ?? ""} threw: ${(error as Error).stack}\n${err}`);
  }
  return { code, out, err };
}

/** Every entry under a directory: its kind and content, to tell whether anything changed. */
function treeOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string, rel: string): void => {
    const st = lstatSync(p);
    if (st.isSymbolicLink()) out[rel] = `link ${readlinkSync(p)}`;
    else if (st.isDirectory()) {
      out[rel] = "dir";
      for (const name of readdirSync(p)) walk(join(p, name), `${rel}/${name}`);
    } else out[rel] = `file ${readFileSync(p, "latin1")}`;
  };
  walk(dir, ".");
  return out;
}

/** A copy of the template whose run works in the copy (run.json and the checkpoint name their workdir). */
function copyTemplate(): string {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-damaged-"));
  cpSync(template, dir, { recursive: true, verbatimSymlinks: true });
  for (const name of ["run.json", "state.json", "events.jsonl"]) {
    const path = join(dir, ".phaseloop/runs", runId, name);
    writeFileSync(path, readFileSync(path, "utf8").split(template).join(dir));
  }
  return dir;
}

/** `run` starts a new run, which the old run's files do not concern: the lock does, so it always runs for lock damage. */
async function checkAll(target: Target, d: Damage, withRun = target === "lock"): Promise<void> {
  const dir = copyTemplate();
  try {
    // the journal is damaged while it holds the newest checkpoint (a crash before state.json was replaced with it)
    if (target === "state.journal") writeFileSync(pathOf(dir, target), `${readFileSync(pathOf(dir, "state.json"), "utf8")}\n`);
    applyDamage(pathOf(dir, target), d);
    const status = await invoke(statusMain as never, ["--workdir", dir], dir);
    expect([0, 2]).toContain(status.code);
    const statusJson = await invoke(statusMain as never, ["--json", "--workdir", dir], dir);
    expect([0, 2]).toContain(statusJson.code);
    const logs = await invoke(logsMain as never, ["--workdir", dir], dir);
    expect([0, 2]).toContain(logs.code);
    const before = treeOf(dir);
    const resume = await invoke(resumeMain, ["--workdir", dir, "--reporter", "plain"], dir);
    expect(resume.err).not.toMatch(/INTERNAL|\n\s+at /);
    expect([0, 2, 3]).toContain(resume.code);
    if (resume.code === 2) {
      expect(resume.err).toMatch(/error [A-Z_]+ |phaseloop resume: /);
      expect(treeOf(dir)).toEqual(before);
      const forced = await invoke(resumeMain, ["--force", "--workdir", dir, "--reporter", "plain"], dir);
      expect(forced.err).not.toMatch(/INTERNAL|\n\s+at /);
      expect([0, 2, 3]).toContain(forced.code);
      // what --force rebuilt from an intact log leaves a log that says each thing once
      if (forced.code === 0 && target !== "events.jsonl" && target !== "iterations.jsonl") expect(logViolations(readRunFiles(dir)!)).toEqual([]);
    }
    if (!withRun) return;
    const run = await invoke(runMain, [join(dir, "p.yaml"), "--workdir", dir, "--reporter", "plain"], dir);
    expect(run.err).not.toMatch(/INTERNAL|\n\s+at /);
    expect([0, 2]).toContain(run.code);
    if (run.code === 2) expect(target).toBe("lock");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("damaged run state", () => {
  it("the undamaged run resumes to its end", async () => {
    await checkAll("events.jsonl", { kind: "truncate", at: 1 }, true);
  });

  const known: [Target, Damage][] = [
    ["state.json", { kind: "replace", text: "{}" }],
    ["state.json", { kind: "replace", text: "[]" }],
    ["state.json", { kind: "edit", line: 0, edit: { picks: [0], value: 7, remove: false } }],
    ["state.json", { kind: "edit", line: 0, edit: { picks: [0, 1], value: null, remove: true } }],
    ["state.json", { kind: "edit", line: 0, edit: { picks: [2], value: "x", remove: false } }],
    ["state.json", { kind: "edit", line: 0, edit: { picks: [0, 7], value: { kind: "phase", phase: "nope", attempt: 1, seq: 1 }, remove: false } }],
    ["state.json", { kind: "edit", line: 0, edit: { picks: [0, 9], value: null, remove: false } }],
    ["lock", { kind: "directory" }],
    ["run.json", { kind: "remove" }],
    ["events.jsonl", { kind: "directory" }],
    ["baseline.json", { kind: "edit", line: 0, edit: { picks: [1, 0], value: 3, remove: false } }],
    ["state.journal", { kind: "edit", line: 0, edit: { picks: [0, 7], value: { kind: "phase", phase: "nope", attempt: 1, seq: 1 }, remove: false } }],
    ["state.journal", { kind: "truncate", at: 0.5 }],
    ["state.journal", { kind: "lines", op: "garbage", line: 0, other: 0 }],
  ];
  it.each(known)("%s damaged as %j is reported, not a crash", async (target, d) => {
    await checkAll(target, d, true);
  });

  it("resume --force rebuilds an unusable checkpoint from the log and finishes the run once", async () => {
    const dir = copyTemplate();
    try {
      writeFileSync(pathOf(dir, "state.json"), "{}");
      const status = await invoke(statusMain as never, ["--json", "--workdir", dir], dir);
      expect(status.code).toBe(0);
      const problems = (JSON.parse(status.out) as { problems: { file: string; message: string }[] }).problems;
      expect(problems.map((p) => p.file)).toEqual([pathOf(dir, "state.json")]);
      const refused = await invoke(resumeMain, ["--workdir", dir], dir);
      expect(refused.code).toBe(2);
      expect(refused.err).toMatch(/state\.json: error RUN_STATE_INVALID snapshot: expected an object/);
      expect(refused.err).toMatch(/--force` rebuilds the checkpoint from events\.jsonl/);
      const forced = await invoke(resumeMain, ["--force", "--workdir", dir, "--reporter", "plain"], dir);
      expect(forced.code).toBe(0);
      const files = readRunFiles(dir)!;
      expect(logViolations(files)).toEqual([]);
      // iteration 1 replayed from the log, not run again: work.txt has one line per iteration
      expect(readFileSync(join(dir, "work.txt"), "utf8")).toBe("1 x2\n2 x2\n3 x2\n");
      expect(files.events.some((e) => e.type === "note" && /rebuilt from events\.jsonl/.test(String(e.message)))).toBe(true);
      expect(existsSync(`${pathOf(dir, "state.json")}.damaged`)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the newest checkpoint only in the journal, unusable, is reported there; resume --force keeps it aside as state.json.damaged", async () => {
    const dir = copyTemplate();
    try {
      const cp = JSON.parse(readFileSync(pathOf(dir, "state.json"), "utf8")) as { snapshot: { awaiting: unknown } };
      cp.snapshot.awaiting = { kind: "phase", phase: "nope", attempt: 1, seq: 1 };
      writeFileSync(pathOf(dir, "state.journal"), `${JSON.stringify(cp)}\n`);
      const before = treeOf(dir);
      const refused = await invoke(resumeMain, ["--workdir", dir], dir);
      expect(refused.code).toBe(2);
      expect(refused.err).toMatch(/state\.journal: error RUN_STATE_INVALID .*nope/);
      expect(treeOf(dir)).toEqual(before);
      const forced = await invoke(resumeMain, ["--force", "--workdir", dir, "--reporter", "plain"], dir);
      expect(forced.code).toBe(0);
      expect(logViolations(readRunFiles(dir)!)).toEqual([]);
      expect(readFileSync(join(dir, "work.txt"), "utf8")).toBe("1 x2\n2 x2\n3 x2\n");
      expect(readFileSync(`${pathOf(dir, "state.json")}.damaged`, "utf8")).toContain('"phase":"nope"');
      expect(readFileSync(pathOf(dir, "state.journal"), "utf8")).toBe("");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a checkpoint only in the journal (a crash before state.json was replaced) is where resume continues from", async () => {
    const dir = copyTemplate();
    try {
      // the journal holds the checkpoint; state.json is an older one that would run a finished phase again
      const state = readFileSync(pathOf(dir, "state.json"), "utf8");
      writeFileSync(pathOf(dir, "state.journal"), `${state}\n`);
      const cp = JSON.parse(state) as { snapshot: { iteration: number; awaiting: { phase?: string } | null } };
      const older = structuredClone(cp);
      older.snapshot.awaiting = { ...older.snapshot.awaiting, phase: "change" };
      writeFileSync(pathOf(dir, "state.json"), JSON.stringify(older));
      const status = await invoke(statusMain as never, ["--json", "--workdir", dir], dir);
      expect(status.code).toBe(0);
      const resumed = await invoke(resumeMain, ["--workdir", dir, "--reporter", "plain"], dir);
      expect(resumed.code).toBe(0);
      expect(logViolations(readRunFiles(dir)!)).toEqual([]);
      // the change phase of iteration 2 ran once: the journal's checkpoint, not the older state.json, was continued
      expect(readFileSync(join(dir, "work.txt"), "utf8")).toBe("1 x2\n2 x2\n3 x2\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("any damage to any state file is an input error or resumable, never a crash", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<Target>(...STATE_FILES, "lock"), damage, async (target, d) => {
        await checkAll(target, d);
      }),
      { numRuns: Number(process.env.PHASELOOP_DAMAGE_RUNS ?? (process.env.CI ? 60 : 25)) },
    );
  }, 600_000);
});
