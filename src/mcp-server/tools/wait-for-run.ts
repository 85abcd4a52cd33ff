import { waitForRun, type WaitEnd } from "../../control/wait-for-run.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";
import { RUN_ID } from "./run-id-schema.ts";

/** Under the 60 s a client waits for an answer by default, so a plain call does not time out. */
export const DEFAULT_WAIT_SECONDS = 50;
export const MAX_WAIT_SECONDS = 3600;
/** How often a wait says it is still waiting, when nothing else happened. */
const HEARTBEAT_MS = 10_000;

export const waitForRunTool: ToolDefinition<{ run_id: string; timeout_seconds?: number }> = {
  name: "wait_for_run",
  description: `Wait until a run finishes, asks a question, or stops running (interrupted, crashed) — or until "timeout_seconds" pass (default ${DEFAULT_WAIT_SECONDS}, at most ${MAX_WAIT_SECONDS}). Sends progress notifications while it waits (each finished phase, and a heartbeat), so you need not poll.

"end" says why it returned: "finished" (read the run's summary, resource phaseloop://runs/RUN_ID/summary, or get_run), "question" (the question is in status.question: answer it with answer_question), "stopped" (resume it with resume_run), "timeout" (the run is still going: call wait_for_run again). Cancelling the call stops only the wait, never the run.

Example: wait_for_run {"run_id": "20261122-130512-k3f9", "timeout_seconds": 50} → {"end": "question", "status": {"state": "awaiting answer", "question": {"phase": "approve", "question": "Approve PLAN.md?"}, …}}`,
  inputSchema: {
    type: "object",
    properties: {
      run_id: RUN_ID,
      timeout_seconds: { type: "number", minimum: 0, maximum: MAX_WAIT_SECONDS, description: `How long to wait at most (default ${DEFAULT_WAIT_SECONDS}).` },
    },
    required: ["run_id"],
    additionalProperties: false,
  },
  annotations: { title: "Wait for a run", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    let last = "waiting";
    const heartbeat = setInterval(() => void context.progress(`still waiting (${last})`).catch(() => undefined), HEARTBEAT_MS);
    try {
      const result = await waitForRun(context.workdir, args.run_id, {
        timeoutMs: (args.timeout_seconds ?? DEFAULT_WAIT_SECONDS) * 1000,
        signal: context.signal,
        onProgress: (p) => {
          last = p.message;
          void context.progress(p.message).catch(() => undefined);
        },
      });
      const question = result.status.question;
      const about = result.end === "question" && question ? `phase ${question.phase} asks: ${question.question}` : result.status.headline;
      return answer({ end: result.end, run: result.run, status: result.status }, nextStep(result.end, result.run, about));
    } finally {
      clearInterval(heartbeat);
    }
  },
};

function nextStep(end: WaitEnd, run: string, headline: string): string {
  switch (end) {
    case "finished":
      return `Run ${run} finished: ${headline}. Its summary: resource phaseloop://runs/${run}/summary.`;
    case "question":
      return `Run ${run} waits for an answer: ${headline}. Answer with answer_question.`;
    case "stopped":
      return `Run ${run} is not running: ${headline}. Resume it with resume_run.`;
    case "timeout":
      return `Run ${run} is still going (${headline}); call wait_for_run again.`;
    default:
      return `Stopped waiting; run ${run} goes on (${headline}).`;
  }
}
