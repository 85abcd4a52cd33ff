import { describe, expect, it } from "vitest";
import { compile, Driver } from "./helpers.ts";

const asking = () =>
  compile({
    phases: {
      plan: { run: "p" },
      approve: { ask: "Approve the plan of iteration {{ iteration }}?", timeout: "48h", next: [{ if: "answer == 'yes'", goto: "build" }, { goto: "plan" }] },
      build: { run: "echo {{ phases.approve.answer }}", next: [{ stop: "complete", reason: "built: {{ phases.approve.answer }}" }] },
    },
    stop: { max_iterations: 3 },
  } as never);

describe("ask phases", () => {
  it("ask the rendered question and wait; the answer is the phase's result for rules and templates", () => {
    const d = new Driver(asking());
    d.startRun();
    const fx = d.finish();
    expect(fx).toContainEqual({ type: "question.ask", phase: "approve", iteration: 1, seq: 2, question: "Approve the plan of iteration 1?", timeoutMs: 48 * 3_600_000 });
    expect(d.snapshot.status).toBe("waiting");
    expect(d.snapshot.awaiting).toEqual({ kind: "answer", phase: "approve", question: "Approve the plan of iteration 1?", seq: 2, askedAt: d.at });
    const next = d.send({ type: "answer.given", at: d.at, phase: "approve", answer: "yes" });
    expect(d.snapshot.results.approve).toMatchObject({ status: "succeeded", answer: "yes", text: "yes" });
    // the answer reaches the command in a variable of its own, never spliced into the command line
    expect(next).toContainEqual(expect.objectContaining({ type: "phase.run", phase: "build", command: 'echo "${PHASELOOP_T1_answer}"', env: expect.objectContaining({ PHASELOOP_T1_answer: "yes" }) }));
    d.finish();
    expect(d.outcome).toEqual({ outcome: "complete", reason: { code: "transition", message: "built: yes" } });
    expect(d.snapshot.questions).toEqual([{ phase: "approve", iteration: 1, question: "Approve the plan of iteration 1?", answer: "yes" }]);
  });

  it("asks again after a crash and a resume, and survives a JSON round trip while waiting", () => {
    const d = new Driver(asking());
    d.startRun();
    d.finish();
    d.send({ type: "interrupted", at: d.at, signal: "SIGKILL" });
    d.snapshot = JSON.parse(JSON.stringify(d.snapshot));
    const fx = d.send({ type: "resumed", at: d.at });
    expect(fx).toEqual([{ type: "question.ask", phase: "approve", iteration: 1, seq: 2, question: "Approve the plan of iteration 1?", timeoutMs: 48 * 3_600_000 }]);
    expect(d.snapshot.status).toBe("waiting");
    d.send({ type: "answer.given", at: d.at, phase: "approve", answer: "no, smaller" });
    expect(d.running?.phase).toBe("plan");
    expect(d.snapshot.iteration).toBe(2);
  });

  it("a wait that timed out fails the phase with timeout; its rules still apply", () => {
    const d = new Driver(asking());
    d.startRun();
    d.finish();
    d.send({ type: "answer.given", at: d.at, phase: "approve", answer: null });
    expect(d.snapshot.results.approve).toMatchObject({ status: "failed", error: "timeout", answer: null });
    expect(d.running?.phase).toBe("plan");
  });

  it("ignores an answer for a phase that asked nothing", () => {
    const d = new Driver(asking());
    d.startRun();
    const fx = d.send({ type: "answer.given", at: d.at, phase: "approve", answer: "yes" });
    expect(fx).toEqual([expect.objectContaining({ type: "note", level: "warning" })]);
    expect(d.running?.phase).toBe("plan");
  });

  it("a question left longer than its timeout fails with timeout when the run is resumed; before that, it is asked with the time left", () => {
    const d = new Driver(asking());
    d.startRun();
    d.finish();
    const asked = d.at;
    d.send({ type: "interrupted", at: asked + 1000, signal: "SIGTERM" });
    const again = d.send({ type: "resumed", at: asked + 3_600_000 });
    expect(again).toEqual([expect.objectContaining({ type: "question.ask", timeoutMs: 47 * 3_600_000 })]);
    d.send({ type: "interrupted", at: asked + 3_600_001, signal: "SIGTERM" });
    const late = d.send({ type: "resumed", at: asked + 48 * 3_600_000 });
    expect(late).toContainEqual(expect.objectContaining({ type: "note", level: "warning" }));
    expect(d.snapshot.results.approve).toMatchObject({ status: "failed", error: "timeout", answer: null });
    expect(d.running?.phase).toBe("plan");
  });
});
