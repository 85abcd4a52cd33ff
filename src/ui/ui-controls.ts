/**
 * The page's controls, handed to the control layer (src/control/): the one
 * set of operations the CLI and the MCP server use to stop, answer and resume
 * runs. Nothing here starts or signals a process itself; a refusal
 * (`ControlError`) becomes the message the page shows.
 */
import { answerQuestion, ControlError, resumeRun, stopRun } from "../control/index.ts";
import type { Host } from "../host/host.ts";
import type { ControlResult, RunControls } from "./controls.ts";

export function uiControls(workdir: string, host: Host): RunControls {
  return {
    stopRun: (runId) =>
      attempt(async () => {
        const r = await stopRun(workdir, runId, { host });
        return r.stopped ? `run ${r.run} stopped; its state is saved (resume it here or with phaseloop resume ${r.run})` : `run ${r.run} was asked to stop; it is saving its state`;
      }),
    answerQuestion: (runId, answer) =>
      attempt(async () => {
        const r = await answerQuestion(workdir, runId, answer, { host });
        return `answered; run ${r.runId} goes on`;
      }),
    resumeRun: (runId) =>
      attempt(async () => {
        const r = await resumeRun(workdir, runId, { host });
        return `run ${r.runId} resumed`;
      }),
  };
}

async function attempt(act: () => Promise<string>): Promise<ControlResult> {
  try {
    return { ok: true, message: await act() };
  } catch (error) {
    if (error instanceof ControlError) return { ok: false, message: `${error.message}${error.hint ? ` (${error.hint})` : ""}`, code: error.code };
    throw error;
  }
}
