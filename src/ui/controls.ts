/**
 * What the page's buttons do: answer a waiting question, stop a run, resume a
 * stopped one. The server knows these operations only through this
 * interface; `controlsFor` hands it the one set of operations the CLI and
 * the MCP server use as well.
 */

export interface ControlResult {
  ok: boolean;
  /** What the page tells the user. */
  message: string;
}

export interface RunControls {
  stopRun(runId: string): Promise<ControlResult>;
  answerQuestion(runId: string, answer: string): Promise<ControlResult>;
  resumeRun(runId: string): Promise<ControlResult>;
}
