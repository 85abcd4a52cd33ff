import { describe, expect, it } from "vitest";
import { batchOutput } from "../../src/reporters/batch-output.ts";
import { createPlainReporter } from "../../src/reporters/plain-reporter.ts";
import { sampleRun } from "./synthetic-run.ts";

describe("batchOutput", () => {
  it("writes what one turn of the event loop printed in one write, and the same text as unbatched", async () => {
    const writes: string[] = [];
    const reporter = batchOutput({ write: (chunk: string) => writes.push(chunk) }, (sink) => createPlainReporter(sink, { color: false, utc: true }));
    const events = sampleRun();
    for (const event of events.slice(0, 5)) reporter.onEvent(event);
    expect(writes).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toHaveLength(1);
    for (const event of events.slice(5)) reporter.onEvent(event);
    await reporter.close();
    let plain = "";
    const direct = createPlainReporter({ write: (chunk: string) => (plain += chunk) }, { color: false, utc: true });
    for (const event of events) direct.onEvent(event);
    await direct.close();
    expect(writes.join("")).toBe(plain);
  });
});
