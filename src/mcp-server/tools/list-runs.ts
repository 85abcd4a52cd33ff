import { listRuns } from "../../control/read-runs.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";

export const listRunsTool: ToolDefinition = {
  name: "list_runs",
  description: `List the runs of the workdir, newest first: id, pipeline, start time, duration, outcome (complete, blocked, failed, stopped, or running, interrupted, crashed), iterations, tokens and cost — what \`phaseloop runs --json\` prints. Runs started from a terminal are listed too.

Use it to find a run's id, or to see whether a run is going on before starting another (one run at a time per workdir). Takes no arguments.

Example: list_runs {} → {"runs": [{"run": "20261122-130512-k3f9", "pipeline": "execute-review", "outcome": "running", "iterations": 2, …}]}`,
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  annotations: { title: "List runs", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(_args, context) {
    return answer({ runs: await listRuns(context.workdir) });
  },
};
