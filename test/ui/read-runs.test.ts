import { appendFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeFiles } from "../../src/host/node-files.ts";
import { nodeHost } from "../../src/host/node-host.ts";
import { readPhaseFiles, readRunView } from "../../src/ui/read-runs.ts";
import { foldRunView } from "../../src/ui/run-view.ts";
import { sampleRun } from "../reporters/synthetic-run.ts";

const made: string[] = [];
afterAll(() => made.forEach((d) => rmSync(d, { recursive: true, force: true })));

function workdir(): { dir: string; run: string } {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-ui-read-"));
  made.push(dir);
  const run = "20261101-120400-ab12";
  mkdirSync(join(dir, ".phaseloop/runs", run, "phases/0001-execute"), { recursive: true });
  return { dir, run };
}

describe("reading a run for the page", () => {
  it("folds in only what the log gained since it was read, and ends where a fresh fold ends", async () => {
    const { dir, run } = workdir();
    const log = join(dir, ".phaseloop/runs", run, "events.jsonl");
    const events = sampleRun();
    writeFileSync(log, events.slice(0, 9).map((e) => `${JSON.stringify(e)}\n`).join(""));
    const first = await readRunView(dir, run, nodeHost);
    expect(first?.view.runs).toHaveLength(2);
    appendFileSync(log, events.slice(9, 15).map((e) => `${JSON.stringify(e)}\n`).join(""));
    appendFileSync(log, `${JSON.stringify(events[15]).slice(0, 20)}`); // a line being written
    const second = await readRunView(dir, run, nodeHost);
    appendFileSync(log, `${JSON.stringify(events[15]).slice(20)}\n${events.slice(16).map((e) => `${JSON.stringify(e)}\n`).join("")}`);
    const [third, again] = await Promise.all([readRunView(dir, run, nodeHost), readRunView(dir, run, nodeHost)]);
    expect(second?.offset).toBeLessThan(third!.offset);
    const fresh = JSON.parse(JSON.stringify(foldRunView(run, events)));
    expect(JSON.parse(JSON.stringify(third!.view))).toEqual(fresh);
    expect(JSON.parse(JSON.stringify(again!.view))).toEqual(fresh);
  });

  it("reads a phase run's files, and nothing through a name or a link that leads elsewhere", async () => {
    const { dir, run } = workdir();
    const phases = join(dir, ".phaseloop/runs", run, "phases");
    writeFileSync(join(phases, "0001-execute/prompt.md"), "Do the task");
    writeFileSync(join(phases, "0001-execute/stdout.log"), "x".repeat(300) + "the end\n");
    const files = await readPhaseFiles(dir, run, "0001-execute", nodeFiles, 100);
    expect(files).toMatchObject({ prompt: "Do the task", stderr: null, cut: { stdout: 208 } });
    expect(files?.stdout?.endsWith("the end\n")).toBe(true);
    const secret = join(dir, "secret");
    mkdirSync(secret);
    writeFileSync(join(secret, "prompt.md"), "private");
    symlinkSync(secret, join(phases, "0002-evil"));
    symlinkSync(join(secret, "prompt.md"), join(phases, "0001-execute/transcript.md"));
    expect(await readPhaseFiles(dir, run, "0002-evil", nodeFiles)).toBeNull();
    expect((await readPhaseFiles(dir, run, "0001-execute", nodeFiles))?.transcript).toBeNull();
    for (const bad of ["../../secret", "0001-execute/..", "secret"]) expect(await readPhaseFiles(dir, run, bad, nodeFiles), bad).toBeUndefined();
    expect(await readPhaseFiles(dir, "../x", "0001-execute", nodeFiles)).toBeUndefined();
  });
});
