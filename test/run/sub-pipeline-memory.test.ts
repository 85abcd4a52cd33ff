/**
 * A `pipeline:` phase on a memory host: the child runs as a child snapshot in
 * the parent's run folder (sub/NNNN-PHASE/), its programs answering from a
 * script, on a fake clock. A crash is injected at every write the run makes,
 * the parent's and the child's; resumed, the run ends as the uncrashed one did.
 */
import { describe, expect, it } from "vitest";
import { HostCrash, MemoryHost, type ProcessScript } from "../../src/host/memory-host.ts";
import { logViolations } from "../cli/crash-points.ts";
import { checkpointOn, compileOn, DIR, jsonlOn, resumeOn, runFilesOn, startOn, startUntilCrash, WORKDIR } from "./memory-run.ts";

const FILE = `${WORKDIR}/parent.yaml`;
const CHILD_DIR = `${DIR}/sub/0002-analyse`;

const PARENT = `phaseloop: 1
name: parent
phases:
  plan:
    run: [plan]
  analyse:
    pipeline: ./flows/analysis.yaml
    params: { area: billing }
    next:
      - if: "status == 'succeeded' && output.outcome == 'complete'"
        stop: complete
        reason: "child: {{ output.reason }}"
      - stop: blocked
        reason: "child {{ output.outcome }}: {{ output.reason }}"
stop: { max_iterations: 1 }
`;

const CHILD = `phaseloop: 1
name: analysis
params:
  area: { type: string }
phases:
  look:
    run: [look]
  judge:
    run: [judge]
    next:
      - if: iteration >= 2
        stop: complete
        reason: "looked at {{ params.area }}"
      - goto: look
stop: { max_iterations: 3 }
`;

/** Each program appends its name and iteration to log.txt in the workdir. */
const programs: ProcessScript = (spec, host) => {
  const name = Array.isArray(spec.command) ? spec.command[0]! : spec.command;
  if (!["plan", "look", "judge"].includes(name)) return { spawnError: `command not found: ${name}` };
  host.files.appendText(`${WORKDIR}/log.txt`, `${name} ${spec.env.PHASELOOP_ITERATION ?? "?"}\n`);
  return { stdout: `${name} done\n`, durationMs: name === "look" ? 1200 : 300 };
};

const newHost = (extra: { crashAt?: number; tear?: boolean } = {}) => new MemoryHost({ cwd: WORKDIR, processes: programs, files: { [FILE]: PARENT, [`${WORKDIR}/flows/analysis.yaml`]: CHILD }, ...extra });

const finishedPhases = (events: Record<string, unknown>[]) => events.filter((e) => e.type === "phase.finished").map((e) => `${String(e.iteration)}:${String(e.phase)}:${String(e.status)}`);

describe("a sub-pipeline on a memory host", () => {
  it("runs the child as a child snapshot in the parent's run folder, its outcome the phase's result", async () => {
    const host = newHost();
    const machine = await compileOn(host, FILE);
    const result = await startOn(host, { machine, file: FILE });
    expect(result).toMatchObject({ exitCode: 0, outcome: "complete" });
    expect(result.snapshot.outcome?.reason.message).toBe("child: looked at billing");
    expect(host.files.readText(`${WORKDIR}/log.txt`)).toBe("plan 1\nlook 1\njudge 1\nlook 2\njudge 2\n");

    const parent = runFilesOn(host);
    expect(logViolations(parent)).toEqual([]);
    expect(finishedPhases(parent.events)).toEqual(["1:plan:succeeded", "1:analyse:succeeded"]);
    const started = parent.events.find((e) => e.type === "phase.started" && e.phase === "analyse");
    expect(started).toMatchObject({ kind: "pipeline", dir: "0002-analyse", sub: "sub/0002-analyse" });
    const done = parent.events.find((e) => e.type === "phase.finished" && e.phase === "analyse");
    // the child's time is the fake clock's: two looks and two judges
    expect(done).toMatchObject({ duration_ms: 3000, output: { outcome: "complete", reason: "looked at billing", iterations: 2 } });

    const child = runFilesOn(host, CHILD_DIR);
    expect(logViolations(child)).toEqual([]);
    expect(child.events[0]).toMatchObject({ type: "run.started", pipeline: "analysis", params: { area: "billing" } });
    expect(finishedPhases(child.events)).toEqual(["1:look:succeeded", "1:judge:succeeded", "2:look:succeeded", "2:judge:succeeded"]);
    expect(JSON.parse(host.files.readText(`${CHILD_DIR}/parent.json`))).toEqual({ phase: "analyse", iteration: 1, attempt: 1, phases_run: 1 });
    expect(checkpointOn(host, CHILD_DIR).snapshot.status).toBe("done");
    expect(host.files.readText(`${CHILD_DIR}/phases/0001-look/stdout.log`)).toBe("look done\n");
  });

  it("survives a crash at every write, the parent's and the child's: resumed, both end as they would have, every event once", async () => {
    const clean = newHost();
    const machine = await compileOn(clean, FILE);
    const cleanResult = await startOn(clean, { machine, file: FILE });
    const total = clean.writes;
    expect(total).toBeGreaterThan(40);
    const cleanChild = finishedPhases(runFilesOn(clean, CHILD_DIR).events);
    let crashedInChild = 0;
    for (let n = 1; n <= total; n++) {
      for (const tear of [false, true]) {
        const host = newHost({ crashAt: n, tear });
        await startUntilCrash(host, { machine, file: FILE });
        expect(host.crashed, `write ${n} was made`).toBeDefined();
        if (Object.keys(host.snapshot()).some((p) => p.startsWith(`${CHILD_DIR}/`))) crashedInChild++;
        const after = host.restart();
        const resumed = await resumeOn(after, { machine, file: FILE });
        const where = `crash at write ${n}${tear ? " (torn)" : ""}`;
        if (resumed !== "finished") expect(resumed.outcome, where).toBe(cleanResult.outcome);
        const parent = runFilesOn(after);
        expect(logViolations(parent), where).toEqual([]);
        const cp = checkpointOn(after);
        expect(cp.snapshot.outcome?.outcome, where).toBe("complete");
        expect(cp.snapshot.outcome?.reason.message, where).toBe("child: looked at billing");
        expect(cp.snapshot.iteration, where).toBe(cleanResult.snapshot.iteration);
        expect(finishedPhases(parent.events), where).toEqual(["1:plan:succeeded", "1:analyse:succeeded"]);
        // the child ran in one folder (named by the phase's seq: a phase the crash cut short ran again before it), to the end it had without the crash
        const folders = Object.keys(after.snapshot()).filter((p) => p.endsWith("/parent.json"));
        expect(folders, where).toHaveLength(1);
        const childDir = folders[0]!.slice(0, -"/parent.json".length);
        expect(parent.events.find((e) => e.type === "phase.started" && e.phase === "analyse")?.sub, where).toBe(childDir.slice(DIR.length + 1));
        const child = runFilesOn(after, childDir);
        expect(logViolations(child), where).toEqual([]);
        expect(finishedPhases(child.events), where).toEqual(cleanChild);
        expect(checkpointOn(after, childDir).snapshot.iteration, where).toBe(2);
      }
    }
    // most crashes came while the child was under way
    expect(crashedInChild).toBeGreaterThan(total);
  });

  it("a crash inside the child: the resumed parent continues the child from its own checkpoint, its finished phases not run again", async () => {
    const machine = await compileOn(newHost(), FILE);
    // the first write after the child's second iteration started: its `look` has run once more
    let n = 0;
    const probe = new MemoryHost({
      cwd: WORKDIR,
      files: { [FILE]: PARENT, [`${WORKDIR}/flows/analysis.yaml`]: CHILD },
      processes: (spec, h) => {
        if (n === 0 && Array.isArray(spec.command) && spec.command[0] === "look" && spec.env.PHASELOOP_ITERATION === "2") n = h.writes + 1;
        return programs(spec, h);
      },
    });
    await startOn(probe, { machine, file: FILE });
    expect(n).toBeGreaterThan(0);
    const host = newHost({ crashAt: n });
    await expect(startOn(host, { machine, file: FILE })).rejects.toBeInstanceOf(HostCrash);
    const after = host.restart();
    expect(checkpointOn(after, CHILD_DIR).snapshot.iteration).toBe(2);
    await resumeOn(after, { machine, file: FILE });
    // plan and the child's first iteration ran once; the look the crash cut short ran again
    expect(after.files.readText(`${WORKDIR}/log.txt`)).toBe("plan 1\nlook 1\njudge 1\nlook 2\nlook 2\njudge 2\n");
    const child = jsonlOn(after, `${CHILD_DIR}/events.jsonl`).records;
    expect(child.filter((e) => e.type === "run.resumed")).toHaveLength(1);
    expect(child.map((e) => e.seq)).toEqual(child.map((_, i) => i + 1));
    expect(checkpointOn(after).snapshot.outcome?.outcome).toBe("complete");
  });
});
