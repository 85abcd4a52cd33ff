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
    expect(lines).toHaveLength(events.length);
    expect(lines.map((line) => JSON.parse(line))).toEqual(events);
    expect(lines.some((line) => line.includes('"type":"phase.output"'))).toBe(true);
  });

  it("prints the sample run as pinned", async () => {
    let text = "";
    const reporter = createJsonReporter({ write: (chunk: string) => (text += chunk) });
    for (const event of sampleRun()) reporter.onEvent(event);
    await reporter.close();
    await expect(text).toMatchFileSnapshot("goldens/json-sample-run.ndjson");
  });
});
