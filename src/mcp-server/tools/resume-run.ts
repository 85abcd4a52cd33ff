import { resumeRun } from "../../control/resume-run.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";
import { RUN_ID } from "./run-id-schema.ts";

export const resumeRunTool: ToolDefinition<{ run_id: string }> = {
  name: "resume_run",
  description: `Resume a run that stopped without finishing (interrupted by stop_run or Ctrl-C, or crashed) from its saved state, as \`phaseloop resume RUN_ID\` does: the phase that was in flight runs again, nothing finished runs twice. The run goes on as a process of its own; follow it with wait_for_run.

Refused for a run that is running or has finished, and for one whose pipeline changed since it started. A run waiting for an answer needs answer_question instead (resumed without one, it asks again).

Example: resume_run {"run_id": "20261122-130512-k3f9"} → {"run_id": "20261122-130512-k3f9", "resumed": true, …}`,
  inputSchema: { type: "object", properties: { run_id: RUN_ID }, required: ["run_id"], additionalProperties: false },
  annotations: { title: "Resume a run", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(args, context) {
    const resumed = await resumeRun(context.workdir, args.run_id, { env: context.env, ...(context.command ? { command: context.command } : {}) });
    return answer({ run_id: resumed.runId, resumed: true, pid: resumed.pid, output: resumed.output }, `Run ${resumed.runId} resumed. Call wait_for_run to follow it.`);
  },
};
