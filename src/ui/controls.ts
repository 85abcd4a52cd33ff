/**
 * What the page's buttons do: answer a waiting question, stop a run, resume a
 * stopped one. The server knows these operations only through this
 * interface; `uiControls` (ui-controls.ts) hands it the one set of
 * operations the CLI and the MCP server use as well (src/control/), and a
 * test can hand it others.
 */

export interface ControlResult {
  ok: boolean;
  /** What the page tells the user. */
  message: string;
  /** A refusal's stable code (ControlError's). */
  code?: string;
}

export interface RunControls {
  stopRun(runId: string): Promise<ControlResult>;
  answerQuestion(runId: string, answer: string): Promise<ControlResult>;
  resumeRun(runId: string): Promise<ControlResult>;
}
