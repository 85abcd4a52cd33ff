import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compilePipeline, DEFAULTS } from "../../src/machine/compile-pipeline.ts";
import type { PipelineDoc } from "../../src/pipeline/spec.ts";
import { compile } from "./helpers.ts";

const doc = (over: Partial<PipelineDoc>): PipelineDoc => ({ phaseloop: 1, name: "t", phases: { a: { run: "true" } }, stop: { max_iterations: 3 }, ...over }) as PipelineDoc;

describe("compiling a pipeline", () => {
  it("fills every default in one place", () => {
    const m = compile({
      agents: { coder: { command: ["coder"] } },
      phases: { work: { agent: "coder", prompt: "do it" }, check: { run: "npm test" } },
      tasks: { source: { glob: "tasks/*.md" } },
      stop: { max_iterations: 5 },
    });
    const [work, check] = m.phases;
    expect(work).toMatchObject({ name: "work", kind: "agent", index: 0, timeoutMs: 30 * 60_000, idleTimeoutMs: 10 * 60_000, successExitCodes: [0], rules: [], consecutiveFailures: null, promptSource: "inline" });
    expect(check).toMatchObject({ name: "check", kind: "run", index: 1, timeoutMs: 10 * 60_000, idleTimeoutMs: null });
    for (const p of m.phases) expect(p.retry).toEqual({ maxAttempts: 3, on: ["transient"], intervalMs: 10_000, backoff: 2, maxDelayMs: 300_000, jitter: false });
    expect(DEFAULTS.retry).toEqual(work!.retry);
    expect(m.tasks).toMatchObject({ maxAttempts: 5, order: "priority", source: { kind: "glob", glob: "tasks/*.md" } });
    expect(m.head).toBe("work");
    expect(m.limits).toEqual({ maxIterations: 5, maxDurationMs: null, noProgress: null, consecutiveFailures: null, budgetTokens: null, budgetCostUsd: null });
  });

  it("takes an agent's timeouts as the default of its phases, and a phase's own over both", () => {
    const m = compile({
      agents: { slow: { command: ["x"], timeout: "2h", idle_timeout: "20m" } },
      phases: { a: { agent: "slow", prompt: "p" }, b: { agent: "slow", prompt: "p", timeout: "90s", idle_timeout: "1m" } },
      stop: { max_iterations: 1 },
    });
    expect(m.phases[0]).toMatchObject({ timeoutMs: 2 * 3_600_000, idleTimeoutMs: 20 * 60_000 });
    expect(m.phases[1]).toMatchObject({ timeoutMs: 90_000, idleTimeoutMs: 60_000 });
  });

  it("resolves retry policies, limits in milliseconds, budgets and breakers", () => {
    const m = compile({
      phases: { a: { run: "true", retry: { max_attempts: 4, on: ["transient", "timeout"], interval: "1s", backoff: 3, max_delay: "30s", jitter: true }, consecutive_failures: 2 } },
      stop: { max_iterations: 9, max_duration: "1h30m", no_progress: 3, consecutive_failures: 4, budget: { tokens: 1000, cost_usd: 2.5 } },
    });
    expect(m.phases[0]!.retry).toEqual({ maxAttempts: 4, on: ["transient", "timeout"], intervalMs: 1000, backoff: 3, maxDelayMs: 30_000, jitter: true });
    expect(m.phases[0]!.consecutiveFailures).toBe(2);
    expect(m.limits).toEqual({ maxIterations: 9, maxDurationMs: 90 * 60_000, noProgress: 3, consecutiveFailures: 4, budgetTokens: 1000, budgetCostUsd: 2.5 });
    expect(m.measuresChanges).toBe(true);
  });

  it("compiles guards and templates to plain data that survives a JSON round trip", () => {
    const m = compile({
      params: { n: { type: "integer", default: 2 } },
      phases: {
        a: { run: ["echo", "{{ params.n }}"], when: "iteration > 1", output: { v: { match: "v=(\\w+)" } } },
        b: { run: "echo {{ phases.a.output.v }}", next: [{ if: "output.v == 'x'", stop: "complete", reason: "got {{ output.v }}" }, { goto: "a" }] },
      },
      stop: { max_iterations: "{{ params.n }}" },
    });
    expect(JSON.parse(JSON.stringify(m))).toEqual(m);
    expect(m.phases[0]!.whenText).toBe("iteration > 1");
    expect(m.phases[1]!.rules.map((r) => [r.ifText, r.goto, r.stop])).toEqual([
      ["output.v == 'x'", undefined, "complete"],
      [undefined, "a", undefined],
    ]);
    expect(typeof m.limits.maxIterations).toBe("object");
  });

  it("reads a prompt file's text, relative to the pipeline file", () => {
    const r = compilePipeline(doc({ agents: { c: { command: ["c"] } }, phases: { a: { agent: "c", prompt: "prompts/a.md" } } }), { file: "dir/p.yaml", promptFiles: { "dir/prompts/a.md": "Hello {{ iteration }}" } });
    expect(r.diagnostics).toEqual([]);
    expect(r.machine!.phases[0]!.promptSource).toBe("dir/prompts/a.md");
  });

  it("reports what it cannot compile as a diagnostic instead of throwing", () => {
    const cases: PipelineDoc[] = [
      doc({ phases: { a: { run: "true", when: "1 +" } } }),
      doc({ phases: { a: { run: "echo {{ unclosed" } } }),
      doc({ phases: { a: { run: "true", timeout: "soon" } } }),
      doc({ agents: { c: { command: ["c"] } }, phases: { a: { agent: "c", prompt: "missing.md" } } }),
      doc({ stop: { max_iterations: 1, when: [{ if: "((", outcome: "failed" }] } }),
    ];
    for (const d of cases) {
      const r = compilePipeline(d, { file: "p.yaml" });
      expect(r.machine).toBeUndefined();
      expect(r.diagnostics.map((x) => [x.code, x.severity, x.file])).toEqual([["INTERNAL", "error", "p.yaml"]]);
    }
  });

  it("never throws on any guard or template text", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (guard, tpl) => {
        const r = compilePipeline(doc({ phases: { a: { run: tpl, when: guard, next: [{ if: guard, goto: "a" }] } } }));
        expect(r.machine !== undefined || r.diagnostics.length > 0).toBe(true);
      }),
    );
  });

  it("lists only the environment variables the pipeline reads", () => {
    const m = compile({ phases: { a: { run: "echo {{ env.HOME }} {{ env.API_KEY }}", when: "env.CI != ''" } }, stop: { max_iterations: 1 } });
    expect(m.envNames).toEqual(["API_KEY", "CI", "HOME"]);
    expect(m.measuresChanges).toBe(false);
  });
});
