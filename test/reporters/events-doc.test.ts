import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { RunEventType } from "../../src/run/run-events.ts";

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
  "hook.finished": true,
  "iteration.finished": true,
  "task.updated": true,
  "note": true,
  "run.interrupted": true,
  "run.finished": true,
};

describe("docs/events.md", () => {
  it("documents every event type", () => {
    const doc = readFileSync(new URL("../../docs/events.md", import.meta.url), "utf8");
    for (const type of Object.keys(TYPES)) expect(doc).toContain(`### \`${type}\``);
  });
});
