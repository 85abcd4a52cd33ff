import { stopRun } from "../../control/stop-run.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";
import { RUN_ID } from "./run-id-schema.ts";

export const stopRunTool: ToolDefinition<{ run_id: string }> = {
  name: "stop_run",
  description: `Stop a running run as Ctrl-C does: the phase in flight is stopped, the run's state is saved and it ends as "interrupted" (exit 130). Nothing is lost: resume_run continues it from where it stopped, re-running the interrupted phase. Works for runs started from a terminal too.

Refused when the run is not running. Returns once the run has saved its state and ended (up to 30 seconds).

Example: stop_run {"run_id": "20261122-130512-k3f9"} → {"stopped": true, "status": {"state": "interrupted", "resume": "phaseloop resume 20261122-130512-k3f9", …}}`,
  inputSchema: { type: "object", properties: { run_id: RUN_ID }, required: ["run_id"], additionalProperties: false },
  annotations: { title: "Stop a run", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run(args, context) {
    const result = await stopRun(context.workdir, args.run_id);
    return answer({ run: result.run, stopped: result.stopped, status: result.status }, result.stopped ? `Run ${result.run} stopped: ${result.status.headline}` : `Run ${result.run} was asked to stop and is still saving its state.`);
  },
};
