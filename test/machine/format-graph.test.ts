import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { describeMachine, formatDot, formatMermaid, machineEdges, mermaidLabel } from "../../src/machine/format-graph.ts";
import { compile } from "./helpers.ts";
import { checkMermaid, decodeMermaidLabel } from "./mermaid-check.ts";

const review = () =>
  compile({
    name: "review loop",
    description: "write, test, review",
    agents: { coder: { command: ["coder"] } },
    tools: { edit: { write: ["src/**"] } },
    phases: {
      write: { agent: "coder", prompt: "write", tools: "edit" },
      test: { run: "npm test", next: [{ if: "exit_code != 0", goto: "write" }] },
      docs: { run: "make docs", when: "params.docs" },
      review: {
        agent: "coder",
        prompt: "review",
        next: [
          { if: "contains(text, '<ok> \"yes\" | #1 `x` & more')", stop: "complete" },
          { if: "output.verdict == 'stuck'", stop: "blocked" },
          { goto: "write" },
        ],
        output: { verdict: { match: "VERDICT: (\\w+)" } },
      },
    },
    params: { docs: { type: "boolean", default: false } },
    stop: { max_iterations: 8, max_duration: "2h", no_progress: 3, consecutive_failures: 4, budget: { tokens: 100000, cost_usd: 5 }, when: [{ if: "run.tokens > 90000", outcome: "stopped" as never }] },
  });

describe("drawing the machine", () => {
  it("lists guarded edges, fall-through, skips, stops, limits and stop rules, long conditions shortened", () => {
    const edges = machineEdges(review()).map((e) => `${e.from} -${e.style}-> ${e.to}: ${e.label}`);
    expect(edges).toEqual([
      "start -solid-> p_write: ",
      "p_write -solid-> p_test: ",
      "p_test -solid-> p_write: exit_code != 0",
      "p_test -solid-> p_docs: otherwise",
      "p_docs -solid-> p_review: ",
      "p_docs -dashed-> p_review: skipped unless params.docs",
      `p_review -solid-> complete: contains(text, '<ok> "yes" |…`,
      "p_review -solid-> blocked: output.verdict == 'stuck'",
      "p_review -solid-> p_write: otherwise",
      "p_write -dashed-> stopped: max_iterations 8 · max_duration 7200s · no_progress 3 · consecutive_failures 4 · tokens 100000 · cost $5",
      "p_write -dashed-> stopped: stop.when run.tokens > 90000",
    ]);
    // the whole condition stays with the shortened label
    expect(machineEdges(review())[6]!.title).toBe(`contains(text, '<ok> "yes" | #1 \`x\` & more')`);
  });

  it("draws Mermaid that the checker accepts, with every label shown as written", () => {
    const text = formatMermaid(review());
    expect(checkMermaid(text)).toEqual([]);
    const labels = [...text.matchAll(/\|("[^"]*")\|/g)].map((m) => decodeMermaidLabel(m[1]!));
    expect(labels).toContain(`contains(text, '<ok> "yes" |…`);
    expect(labels).toContain("exit_code != 0");
    expect(text).toMatch(/p_write\["write \(loop head\)/);
    expect(text).toContain("p_docs -.->");
    expect(text).toContain('p_write -.->|"max_iterations 8 · max_duration 7200s · no_progress 3 · consecutive_failures 4 · tokens 100000 · cost $5"| stopped');
    for (const o of ["complete", "blocked", "stopped"]) expect(text).toContain(`  ${o}((`);
    // an outcome nothing leads to is not drawn
    expect(text).not.toContain("failed((");
  });

  it("quotes any text as a Mermaid label that reads back the same", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom("a", " ", '"', "|", "<", ">", "&", "#", "`", ";", "1", "[", "]", "(", ")", "{", "}", "é", "\\") }), (s) => {
        const quoted = mermaidLabel(s);
        expect(checkMermaid(`flowchart TD\n  a[${quoted}]\n  a -->|${quoted}| a\n`)).toEqual([]);
        expect(decodeMermaidLabel(quoted)).toBe(s);
      }),
    );
  });

  it("draws phase names that are not identifiers under safe node ids", () => {
    const m = compile({ phases: { "plan-it": { run: "true" }, "do it!": { run: "true", next: [{ goto: "plan-it" }] } }, stop: { max_iterations: 1 } });
    const text = formatMermaid(m);
    expect(checkMermaid(text)).toEqual([]);
    expect(text).toContain("p_do_it_ --> p_plan_it");
  });

  it("draws DOT with escaped labels and outcome nodes", () => {
    const text = formatDot(review());
    expect(text.startsWith('digraph "review loop" {')).toBe(true);
    expect(text.trimEnd().endsWith("}")).toBe(true);
    expect(text).toContain(`p_review -> complete [label="contains(text, '<ok> \\"yes\\" |…", tooltip="contains(text, '<ok> \\"yes\\" | #1 \`x\` & more')"];`);
    expect(text).toContain(`p_docs -> p_review [label="skipped unless params.docs", style=dashed];`);
    // every quote in the output is either escaped or balanced per line
    for (const line of text.split("\n")) expect(line.replace(/\\./g, "").split('"').length % 2).toBe(1);
  });

  it("explains itself in words for a dry run", () => {
    const text = describeMachine(review());
    expect(text).toContain("pipeline review loop: write, test, review");
    expect(text).toContain("loop head: write");
    expect(text).toContain("limits: max_iterations 8, max_duration 7200s, no_progress 3, consecutive_failures 4, tokens 100000, cost $5");
    expect(text).toContain("1. write — agent coder with tools edit, prompt inline; timeout 1800s, idle 600s; retry 3 attempts on transient");
    expect(text).toContain("if exit_code != 0 → go to write (next iteration)");
    expect(text).toContain("runs only when params.docs");
    expect(text).toContain("if output.verdict == 'stuck' → stop: blocked");
    expect(text).toContain("stop rules (after every phase):\n  if run.tokens > 90000 → stopped");
  });

  it("shows tasks and the final gate", () => {
    const m = compile({
      phases: { work: { run: "true", next: [{ if: "exit_code == 0", task: "done", goto: "work" }] }, gate: { run: "make check" } },
      tasks: { source: { glob: "tasks/*.md" }, max_attempts: 2, final_gate: "gate" },
      stop: { max_iterations: 10 },
    });
    expect(describeMachine(m)).toContain("tasks: markdown files tasks/*.md, order priority, at most 2 attempts each, final gate gate");
    const mer = formatMermaid(m);
    expect(checkMermaid(mer)).toEqual([]);
    expect(mer).toContain('p_gate -->|"gate passes"| complete');
    expect(mer).toContain('p_gate -->|"gate fails: last task reopened"| queue');
    expect(mer).toContain('queue -->|"all tasks done"| p_gate');
    expect(mer).toContain('queue -->|"next task"| p_work');
    expect(mer).toContain('queue -->|"no task can go on (blocked)"| blocked');
    // going to the loop head goes back to the queue, which picks the next task
    expect(mer).toContain('p_work -->|"exit_code == 0 · task done"| queue');
  });

  it("draws the same nodes and edges in Mermaid and DOT, each once, every node but start with a way in", () => {
    const machines = [
      review(),
      compile({
        phases: {
          work: { run: "true", next: [{ if: "exit_code == 0 && phases.work.attempts < 3 && iteration > 1", label: "tests pass", task: "done", goto: "work" }, { if: "exit_code == 2", task: "blocked", goto: "work" }] },
          gate: { run: "make check" },
        },
        tasks: { source: { glob: "tasks/*.md" }, max_attempts: 2, final_gate: "gate" },
        stop: { max_iterations: 10, no_progress: 2 },
      }),
    ];
    for (const m of machines) {
      const mer = formatMermaid(m);
      const dot = formatDot(m);
      const merNodes = [...mer.matchAll(/^ {2}([A-Za-z_][A-Za-z0-9_]*)[[({]/gm)].map((x) => x[1]).sort();
      const dotNodes = [...dot.matchAll(/^ {2}([A-Za-z_][A-Za-z0-9_]*) \[/gm)].map((x) => x[1]).sort();
      expect(merNodes).toEqual(dotNodes);
      const merEdges = [...mer.matchAll(/^ {2}(\w+) -\.?->(?:\|"([^"]*)"\|)? (\w+)$/gm)].map((x) => `${x[1]}>${x[3]}:${decodeMermaidLabel(`"${x[2] ?? ""}"`)}`);
      const dotEdges = [...dot.matchAll(/^ {2}(\w+) -> (\w+) \[label="((?:[^"\\]|\\.)*)"/gm)].map((x) => `${x[1]}>${x[2]}:${x[3]!.replace(/\\(.)/g, "$1")}`);
      expect(merEdges.sort()).toEqual(dotEdges.sort());
      expect(new Set(merEdges).size).toBe(merEdges.length);
      const targets = new Set(merEdges.map((e) => e.split(">")[1]!.split(":")[0]));
      for (const n of merNodes) if (n !== "start") expect(targets, `${n} has a way in`).toContain(n);
    }
    expect(formatMermaid(machines[1]!)).toContain('p_work -->|"tests pass · task done"| queue');
    expect(formatMermaid(machines[1]!)).toContain('p_work -->|"exit_code == 2 · task blocked"| queue');
  });

  it("draws a conditional rule and the fall-back after it to the same phase as two arrows, the fall-back labelled otherwise", () => {
    // met as: `graph` drew `if: exit_code == 0 → verify` and `goto: verify` as one unlabelled arrow
    const m = compile({
      phases: {
        execute: { run: "true", next: [{ if: "exit_code == 0", goto: "verify" }, { goto: "verify" }] },
        verify: { run: "true", next: [{ if: "exit_code == 0", stop: "complete" }, { if: "exit_code == 1", goto: "execute" }, { if: "exit_code == 2", label: "flaky", goto: "execute" }, { label: "anything else", goto: "execute" }] },
      },
      stop: { max_iterations: 3 },
    });
    const edges = machineEdges(m).filter((e) => e.style === "solid").map((e) => `${e.from}>${e.to}:${e.label}`);
    expect(edges).toEqual(["start>p_execute:", "p_execute>p_verify:exit_code == 0", "p_execute>p_verify:otherwise", "p_verify>complete:exit_code == 0", "p_verify>p_execute:exit_code == 1", "p_verify>p_execute:flaky", "p_verify>p_execute:anything else"]);
    const mer = formatMermaid(m);
    expect(checkMermaid(mer)).toEqual([]);
    expect(mer).toContain('p_execute -->|"exit_code == 0"| p_verify');
    expect(mer).toContain('p_execute -->|"otherwise"| p_verify');
    expect(mer).toContain('p_verify -->|"anything else"| p_execute');
    const dot = formatDot(m);
    expect(dot).toContain('p_execute -> p_verify [label="exit_code == 0"];');
    expect(dot).toContain('p_execute -> p_verify [label="otherwise"];');
    expect(dot).toContain('p_verify -> p_execute [label="flaky", tooltip="exit_code == 2"];');
    expect(dot).toContain('p_verify -> p_execute [label="anything else", tooltip="otherwise"];');
  });

  it("labels the fall-through after conditional rules that all point elsewhere otherwise, also when one of them leads to the same phase", () => {
    const m = compile({
      phases: { a: { run: "true", next: [{ if: "exit_code == 0", goto: "b" }] }, b: { run: "true" } },
      stop: { max_iterations: 2 },
    });
    const edges = machineEdges(m).filter((e) => e.from === "p_a" && e.style === "solid").map((e) => e.label);
    expect(edges).toEqual(["exit_code == 0", "otherwise"]);
  });

  it("draws every rule as an arrow of its own in both formats, whatever the rules", () => {
    const target = fc.constantFrom("a", "b", "c");
    const rule = fc.record({ cond: fc.option(fc.constantFrom("exit_code == 0", "exit_code == 1", "iteration > 1"), { nil: undefined }), goto: target, label: fc.option(fc.constantFrom("ok", "retry"), { nil: undefined }) });
    fc.assert(
      fc.property(fc.uniqueArray(rule, { minLength: 1, maxLength: 5, selector: (r) => r.cond ?? "" }), (rules) => {
        const next = rules.map((r) => ({ ...(r.cond ? { if: r.cond } : {}), goto: r.goto, ...(r.label ? { label: r.label } : {}) }));
        // rules after an unconditional one are never reached: keep up to the first
        const upto = next.findIndex((r) => !("if" in r));
        const kept = upto === -1 ? next : next.slice(0, upto + 1);
        const m = compile({ phases: { a: { run: "true", next: kept }, b: { run: "true" }, c: { run: "true" } }, stop: { max_iterations: 2 } });
        const out = machineEdges(m).filter((e) => e.from === "p_a" && e.style === "solid");
        // one arrow per rule, and the fall-through when every rule has a condition
        const fallBack = kept.every((r) => "if" in r);
        expect(out.length).toBe(kept.length + (fallBack ? 1 : 0));
        for (const [i, r] of kept.entries()) expect(out[i]).toMatchObject({ to: `p_${r.goto}`, label: r.label ?? r.if ?? (i === 0 ? "" : "otherwise") });
        if (fallBack) expect(out[kept.length]).toMatchObject({ to: "p_b", label: "otherwise" });
        expect(formatDot(m).split("\n").filter((l) => l.startsWith("  p_a -> ") && !l.includes("dashed")).length).toBe(out.length);
      }),
    );
  });
});
