import { describe, expect, it } from "vitest";
import { createJsonReporter } from "../../src/reporters/json-reporter.ts";
import { sampleRun } from "./synthetic-run.ts";

describe("createJsonReporter", () => {
  it("writes each event as one JSON line, output lines included", async () => {
    let text = "";
    const reporter = createJsonReporter({ write: (chunk: string) => (text += chunk) });
    const events = sampleRun();
    for (const event of events) reporter.onEvent(event);
    await reporter.close();
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.trimEnd().split("\n");
    expect(lines).toHaveLength(events.length + 1);
    expect(lines.slice(0, -1).map((line) => JSON.parse(line))).toEqual(events);
    expect(lines.some((line) => line.includes('"type":"phase.output"'))).toBe(true);
  });

  it("ends by naming the run folder and its summary, as every reporter does", async () => {
    let text = "";
    const reporter = createJsonReporter({ write: (chunk: string) => (text += chunk) });
    const events = sampleRun();
    for (const event of events) reporter.onEvent(event);
    await reporter.close();
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!) as Record<string, unknown>;
    const finished = events.find((e) => e.type === "run.finished")!;
    const started = events.find((e) => e.type === "run.started") as { workdir: string };
    expect(last).toMatchObject({ type: "run.folder", seq: 0, run: finished.run });
    expect(String(last.folder)).toMatch(new RegExp(`\\.phaseloop/runs/${finished.run}/$`));
    expect(last.summary).toBe(`${String(last.folder)}summary.md`);
    expect(started.workdir === undefined || String(last.folder).includes(".phaseloop/runs/")).toBe(true);
  });

  it("prints the sample run as pinned", async () => {
    let text = "";
    const reporter = createJsonReporter({ write: (chunk: string) => (text += chunk) });
    for (const event of sampleRun()) reporter.onEvent(event);
    await reporter.close();
    await expect(text).toMatchFileSnapshot("goldens/json-sample-run.ndjson");
  });
});
