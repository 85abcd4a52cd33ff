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
  it("lists guarded edges, fall-through, skips and stops", () => {
    const edges = machineEdges(review()).map((e) => `${e.from} -${e.kind}-> ${e.to}: ${e.label}`);
    expect(edges).toEqual([
      "write -fall-> test: ",
      "test -goto-> write: exit_code != 0",
      "test -fall-> docs: otherwise",
      "docs -fall-> review: ",
      "docs -skip-> review: skip unless params.docs",
      `review -stop-> complete: contains(text, '<ok> "yes" | #1 \`x\` & more')`,
      "review -stop-> blocked: output.verdict == 'stuck'",
      "review -goto-> write: ",
    ]);
  });

  it("draws Mermaid that the checker accepts, with every label shown as written", () => {
    const text = formatMermaid(review());
    expect(checkMermaid(text)).toEqual([]);
    const labels = [...text.matchAll(/\|("[^"]*")\|/g)].map((m) => decodeMermaidLabel(m[1]!));
    expect(labels).toContain(`contains(text, '<ok> "yes" | #1 \`x\` & more')`);
    expect(labels).toContain("exit_code != 0");
    expect(text).toMatch(/p_write\["write \(loop head\)/);
    expect(text).toContain("p_docs -.->");
    expect(text).toMatch(/limits\["limits: max_iterations 8, max_duration 7200s, no_progress 3, consecutive_failures 4, tokens 100000, cost \$5"\]/);
    for (const o of ["complete", "blocked", "stopped"]) expect(text).toContain(`  ${o}((`);
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
    expect(text).toContain(`"review" -> "(complete)" [label="contains(text, '<ok> \\"yes\\" | #1 \`x\` & more')"];`);
    expect(text).toContain(`"docs" -> "review" [label="skip unless params.docs", style=dashed];`);
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
    expect(mer).toContain('p_work -->|"exit_code == 0 / task done"| p_work');
  });
});
