/**
 * The runner on a host in memory: a small compiled pipeline whose programs
 * answer from a script, a fake clock, and a crash injected at every write the
 * runner makes. After each crash the run is resumed from what the memory host
 * holds (as `resume` does: validators, repairs, replayed events) and must end
 * as the uncrashed run did, with every event once.
 */
import { describe, expect, it } from "vitest";
import { HostCrash, MemoryHost, type ProcessScript } from "../../src/host/memory-host.ts";
import { compilePipeline } from "../../src/machine/compile-pipeline.ts";
import type { Machine } from "../../src/machine/types.ts";
import { validatePipelineText } from "../../src/pipeline/load-pipeline.ts";
import type { Checkpoint } from "../../src/run/checkpoint.ts";
import type { RunEvent } from "../../src/run/run-events.ts";
import type { RunResult } from "../../src/run/run-pipeline.ts";
import { logViolations } from "../cli/crash-points.ts";
import { DIR, resumeOn, RUN_ID, startOn, WORKDIR } from "./memory-run.ts";

const FILE = `${WORKDIR}/loop.yaml`;

/** Two iterations of two phases and a hook: the shortest run with an iteration boundary. */
const PIPELINE = `phaseloop: 1
name: short
hooks:
  after_iteration: [note]
phases:
  change:
    run: [work]
  check:
    run: [check]
    next:
      - if: iteration >= 2
        stop: complete
      - goto: change
stop:
  max_iterations: 4
`;

function compile(text = PIPELINE): Machine {
  const loaded = validatePipelineText(text, FILE);
  expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  return compilePipeline(loaded.doc!, { promptFiles: loaded.promptFiles, file: loaded.file }).machine!;
}

/** `work` appends the iteration to work.txt; `check` says how many lines it has; `note` counts the hooks. */
const programs: ProcessScript = (spec, host) => {
  const name = Array.isArray(spec.command) ? spec.command[0] : spec.command;
  const iteration = spec.env.PHASELOOP_ITERATION ?? "?";
  const path = `${WORKDIR}/work.txt`;
  if (name === "work") {
    host.files.appendText(path, `${iteration}\n`);
    return { stdout: `wrote ${iteration}\n`, durationMs: 1500 };
  }
  if (name === "check") return { stdout: `${host.files.readText(path).trim().split("\n").length} lines\n`, durationMs: 200 };
  if (name === "note") return { stdout: "", durationMs: 10 };
  return { spawnError: `command not found: ${name}` };
};

/** `run` and `resume` as start-run.ts and resume-run.ts do them, on what the host holds (memory-run.ts). */
const start = (host: MemoryHost, machine: Machine): Promise<RunResult> => startOn(host, { machine, file: FILE });
const resume = (host: MemoryHost, machine: Machine): Promise<RunResult | "finished"> => resumeOn(host, { machine, file: FILE });

function runFiles(host: MemoryHost) {
  const snap = host.snapshot();
  const badLines: string[] = [];
  const read = (name: string) => {
    const text = snap[`${DIR}/${name}`] ?? "";
    if (text !== "" && !text.endsWith("\n")) badLines.push(`${name}: the last line has no newline`);
    return text.split("\n").filter((l) => l !== "").flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        badLines.push(`${name}: ${l.slice(0, 80)}`);
        return [];
      }
    });
  };
  return { runId: RUN_ID, events: read("events.jsonl"), iterations: read("iterations.jsonl"), badLines };
}

const outcomeOf = (host: MemoryHost) => (JSON.parse(host.files.readText(`${DIR}/state.json`)) as Checkpoint).snapshot.outcome?.outcome;

describe("the runner on a memory host", () => {
  it("runs a small pipeline to its end: events, iterations, checkpoint, summary and the programs' logs", async () => {
    const host = new MemoryHost({ cwd: WORKDIR, processes: programs });
    const result = await start(host, compile());
    expect(result).toMatchObject({ exitCode: 0, outcome: "complete" });
    const files = runFiles(host);
    expect(logViolations(files)).toEqual([]);
    expect(files.events.filter((e) => e.type === "phase.finished").map((e) => `${String(e.iteration)}:${String(e.phase)}`)).toEqual(["1:change", "1:check", "2:change", "2:check"]);
    // after_iteration runs after the first iteration; the second ends the run
    expect(files.events.filter((e) => e.type === "hook.finished")).toHaveLength(1);
    expect(files.iterations.map((r) => r.iteration)).toEqual([1, 2]);
    expect(host.files.readText(`${WORKDIR}/work.txt`)).toBe("1\n2\n");
    expect(host.files.readText(`${DIR}/phases/0003-change/stdout.log`)).toBe("wrote 2\n");
    expect(host.files.readText(`${DIR}/summary.md`)).toContain("complete");
    expect(outcomeOf(host)).toBe("complete");
    // the journal was settled into state.json and emptied; no scratch file is left
    expect(host.files.readText(`${DIR}/state.journal`)).toBe("");
    expect(host.files.exists(`${DIR}/state.json.next`)).toBe(false);
  });

  it("stamps events with the host's clock, never the machine's", async () => {
    const host = new MemoryHost({ cwd: WORKDIR, processes: programs, now: Date.UTC(2031, 4, 6, 7, 8, 9) });
    await start(host, compile());
    const { events } = runFiles(host);
    expect(events[0]!.at).toBe("2031-05-06T07:08:09.000Z");
    // the programs' durations moved the fake clock: 2 × 1.5 s + 2 × 0.2 s + a hook's 10 ms
    expect(events[events.length - 1]!.at).toBe(new Date(Date.UTC(2031, 4, 6, 7, 8, 9) + 3410).toISOString());
    const finished = events.filter((e) => e.type === "phase.finished").map((e) => e.duration_ms);
    expect(finished).toEqual([1500, 200, 1500, 200]);
  });

  it("survives a crash at every write it makes: resumed, the run ends as it would have, every event once", async () => {
    const machine = compile();
    const clean = new MemoryHost({ cwd: WORKDIR, processes: programs });
    await start(clean, machine);
    const total = clean.writes;
    expect(total).toBeGreaterThan(30);
    const cleanFiles = runFiles(clean);
    for (let n = 1; n <= total; n++) {
      for (const tear of [false, true]) {
        const host = new MemoryHost({ cwd: WORKDIR, processes: programs, crashAt: n, tear });
        await start(host, machine).catch((error: unknown) => {
          if (!(error instanceof HostCrash)) throw error;
        });
        expect(host.crashed, `write ${n} was made`).toBeDefined();
        const after = host.restart();
        await resume(after, machine);
        const where = `crash at write ${n}${tear ? " (torn)" : ""}`;
        const files = runFiles(after);
        expect(logViolations(files), where).toEqual([]);
        expect(outcomeOf(after), where).toBe("complete");
        expect(files.iterations.map((r) => r.iteration), where).toEqual(cleanFiles.iterations.map((r) => r.iteration));
        expect(files.events.filter((e) => e.type === "phase.finished").map((e) => `${String(e.iteration)}:${String(e.phase)}`), where).toEqual(["1:change", "1:check", "2:change", "2:check"]);
        // a phase that ran again after the crash appended its line again; its iteration's work is there
        expect(new Set(after.files.readText(`${WORKDIR}/work.txt`).trim().split("\n")), where).toEqual(new Set(["1", "2"]));
      }
    }
  });

  it("resumes a run interrupted by a crash from its checkpoint: nothing finished runs again", async () => {
    const machine = compile();
    // the crash comes at the first write after the second iteration's first phase has done its work: the write of its log
    let n = 0;
    const probe = new MemoryHost({
      cwd: WORKDIR,
      processes: (spec, h) => {
        const r = programs(spec, h);
        if (spec.env.PHASELOOP_ITERATION === "2" && Array.isArray(spec.command) && spec.command[0] === "work") n = h.writes + 1;
        return r;
      },
    });
    await start(probe, machine);
    expect(n).toBeGreaterThan(0);
    const host = new MemoryHost({ cwd: WORKDIR, processes: programs, crashAt: n });
    await expect(start(host, machine)).rejects.toBeInstanceOf(HostCrash);
    const after = host.restart();
    const before = (JSON.parse(after.files.readText(`${DIR}/state.journal`).trim().split("\n").pop() || after.files.readText(`${DIR}/state.json`)) as Checkpoint).snapshot;
    expect(before.iteration).toBe(2);
    await resume(after, machine);
    const { events } = runFiles(after);
    // the phase the crash stopped ran again (its program twice); its first start was never logged, as no checkpoint carried it
    expect(after.files.readText(`${WORKDIR}/work.txt`)).toBe("1\n2\n2\n");
    const ran = events.filter((e) => e.type === "phase.started").map((e) => `${String(e.iteration)}:${String(e.phase)}`);
    expect(ran).toEqual(["1:change", "1:check", "2:change", "2:check"]);
    expect(events.filter((e) => e.type === "run.resumed")).toHaveLength(1);
    expect((events as unknown as RunEvent[]).map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });
});
