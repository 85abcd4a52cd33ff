import { describe, expect, it } from "vitest";
import { createReporter, deferReporter, resolveReporterKind } from "../../src/reporters/create-reporter.ts";
import type { Reporter, RunEvent } from "../../src/run/run-events.ts";
import { sampleRun } from "./synthetic-run.ts";

function sink(): { write(chunk: string): boolean; text: string } {
  return {
    text: "",
    write(chunk: string): boolean {
      this.text += chunk;
      return true;
    },
  };
}

describe("resolveReporterKind", () => {
  it("picks the terminal view only on an interactive terminal", () => {
    expect(resolveReporterKind("auto", { isTTY: true, env: {} })).toBe("tty");
    expect(resolveReporterKind("auto", { isTTY: false, env: {} })).toBe("plain");
    expect(resolveReporterKind("auto", { isTTY: true, env: { CI: "true" } })).toBe("plain");
    expect(resolveReporterKind("auto", { isTTY: true, env: { CI: "1" } })).toBe("plain");
    expect(resolveReporterKind("auto", { isTTY: true, env: { CI: "false" } })).toBe("tty");
    expect(resolveReporterKind("auto", { isTTY: true, env: { TERM: "dumb" } })).toBe("plain");
    // a pseudo-terminal that reports no width would cut the view to nothing
    expect(resolveReporterKind("auto", { isTTY: true, columns: 0, env: {} })).toBe("plain");
    expect(resolveReporterKind("auto", { isTTY: true, columns: 120, env: {} })).toBe("tty");
  });

  it("keeps an explicit choice", () => {
    expect(resolveReporterKind("json", { isTTY: true, env: {} })).toBe("json");
    expect(resolveReporterKind("tty", { isTTY: false, env: { CI: "true" } })).toBe("tty");
    expect(resolveReporterKind("plain", { isTTY: true, env: {} })).toBe("plain");
  });
});

describe("createReporter", () => {
  it("returns at once and delivers every event in order once the reporter has loaded", async () => {
    const stdout = sink();
    const reporter = createReporter("json", { stdout, stderr: sink(), isTTY: false, color: false, env: {} });
    const events = sampleRun();
    for (const event of events) reporter.onEvent(event);
    await reporter.close();
    // every event, then the run folder (run-folder.ts) as every reporter ends
    expect(stdout.text.trimEnd().split("\n").map((l) => JSON.parse(l) as RunEvent).slice(0, -1)).toEqual(events);
  });

  it("prints plain lines off a terminal", async () => {
    const stdout = sink();
    const reporter = createReporter("auto", { stdout, stderr: sink(), isTTY: false, color: false, env: {} });
    for (const event of sampleRun()) reporter.onEvent(event);
    await reporter.close();
    expect(stdout.text).toMatch(/^\d\d:\d\d:\d\d run 20261101-120400-ab12 started/);
    expect(stdout.text).not.toMatch(/\u001b\[/);
  });

  it("rejects close when the reporter cannot be built", async () => {
    const reporter = deferReporter(Promise.reject(new Error("boom")));
    reporter.onEvent(sampleRun()[0]!);
    await expect(reporter.close()).rejects.toThrow("boom");
  });

  it("forwards events sent after loading straight through", async () => {
    const seen: number[] = [];
    const target: Reporter = { onEvent: (e) => void seen.push(e.seq), close: () => Promise.resolve() };
    const reporter = deferReporter(Promise.resolve(target));
    const [a, b] = sampleRun();
    reporter.onEvent(a!);
    await Promise.resolve();
    await Promise.resolve();
    reporter.onEvent(b!);
    await reporter.close();
    expect(seen).toEqual([1, 2]);
  });
});
