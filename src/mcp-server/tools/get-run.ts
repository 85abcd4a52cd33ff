import { getRun, readStartedVia } from "../../control/read-runs.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";
import { RUN_ID } from "./run-id-schema.ts";

export const getRunTool: ToolDefinition<{ run_id?: string }> = {
  name: "get_run",
  description: `Show where one run stands — what \`phaseloop status --json\` prints: its state (running, awaiting answer, interrupted, crashed, or its outcome), a one-line headline, the iteration and phase, counters, breakers, tokens and cost, the last error, the question it waits on ("question"), and how it was started ("started_via"). The latest run when "run_id" is left out.

Use it to check a run once; use wait_for_run to wait for it to change.

Example: get_run {"run_id": "20261122-130512-k3f9"} → {"state": "awaiting answer", "headline": "awaiting answer: phase approve asks: …", "question": {"phase": "approve", "question": "…"}, …}`,
  inputSchema: { type: "object", properties: { run_id: { ...RUN_ID, description: `${RUN_ID.description} Optional: the latest run by default.` } }, additionalProperties: false },
  annotations: { title: "Get a run's status", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    const status = await getRun(context.workdir, args.run_id);
    return answer({ ...status, started_via: await readStartedVia(context.workdir, status.run) }, status.headline);
  },
};
