import { describe, expect, it } from "vitest";
import { classifyProcess, isTransientText } from "../../src/runtime/classify-failure.ts";
import type { ProcessResult } from "../../src/host/run-process.ts";

const result = (over: Partial<ProcessResult>): ProcessResult => ({
  exitCode: 1, signal: null, timedOut: false, idleTimedOut: false, aborted: false, durationMs: 10, stdout: "", stdoutTail: "", stderrTail: "", wroteLogs: false, ...over,
});

describe("transient detection", () => {
  it("does not take numbers that contain 500 for HTTP errors (a seed's substring bug)", () => {
    expect(isTransientText("tokens used: 15003")).toBe(false);
    expect(isTransientText("processed 500 files")).toBe(false);
    expect(isTransientText("error at line 503 of parser.ts")).toBe(false);
  });
  it("recognises rate limits, 5xx statuses and network errors", () => {
    expect(isTransientText("HTTP 503 Service Unavailable")).toBe(true);
    expect(isTransientText("Error: 429 Too Many Requests")).toBe(true);
    expect(isTransientText("rate limit exceeded, retry later")).toBe(true);
    expect(isTransientText("request failed: ECONNRESET")).toBe(true);
    expect(isTransientText('{"type":"error","error":{"type":"overloaded_error"}}')).toBe(true);
  });
});

describe("classifyProcess", () => {
  it("is null for an accepted exit code", () => {
    expect(classifyProcess(result({ exitCode: 0 }), [0])).toBeNull();
    expect(classifyProcess(result({ exitCode: 3 }), [0, 3])).toBeNull();
  });
  it("names timeouts, idle timeouts and spawn errors before exit codes", () => {
    expect(classifyProcess(result({ timedOut: true, exitCode: null }), [0])?.error).toBe("timeout");
    expect(classifyProcess(result({ idleTimedOut: true, exitCode: null }), [0])?.error).toBe("idle_timeout");
    expect(classifyProcess(result({ spawnError: "command not found: x" }), [0])?.error).toBe("spawn_error");
  });
  it("uses the pipeline's transient patterns and exit codes", () => {
    expect(classifyProcess(result({ exitCode: 75 }), [0], [{ exit_codes: [75] }])?.error).toBe("transient");
    expect(classifyProcess(result({ stderrTail: "backend busy" }), [0], [{ patterns: ["\\bbusy\\b"] }])?.error).toBe("transient");
    expect(classifyProcess(result({ stderrTail: "tokens used: 15003" }), [0])?.error).toBe("exit_nonzero");
  });
});
