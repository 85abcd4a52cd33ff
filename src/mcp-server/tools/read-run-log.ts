import { DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT, readRunLog } from "../../control/read-run-log.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";
import { RUN_ID } from "./run-id-schema.ts";

export const readRunLogTool: ToolDefinition<{ run_id: string; cursor?: string; limit?: number; phase?: string }> = {
  name: "read_run_log",
  description: `Read a run's event log (events.jsonl: run.started, iteration.started, phase.started, phase.finished with status, exit code, extracted output and changed files, question.asked, run.finished, …), a page at a time, oldest first.

Pass the "cursor" of the previous page to read the next one; "more" says whether the log already holds more. At the end of the log, the cursor stays valid: call again later with it to get only what the run wrote since. "phase" keeps only that phase's events; "limit" is the page size (default ${DEFAULT_LOG_LIMIT}, at most ${MAX_LOG_LIMIT}).

Example: read_run_log {"run_id": "20261122-130512-k3f9", "phase": "review", "limit": 20} → {"events": […], "cursor": "ZXZlbnRz…", "more": true}`,
  inputSchema: {
    type: "object",
    properties: {
      run_id: RUN_ID,
      cursor: { type: "string", maxLength: 200, description: "The cursor of the previous page; leave it out to start at the beginning." },
      limit: { type: "integer", minimum: 1, maximum: MAX_LOG_LIMIT, description: `Events per page (default ${DEFAULT_LOG_LIMIT}).` },
      phase: { type: "string", minLength: 1, description: "Only the events of this phase." },
    },
    required: ["run_id"],
    additionalProperties: false,
  },
  annotations: { title: "Read a run's log", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    const page = await readRunLog(context.workdir, args.run_id, {
      ...(args.cursor !== undefined ? { cursor: args.cursor } : {}),
      ...(args.limit !== undefined ? { limit: args.limit } : {}),
      ...(args.phase !== undefined ? { phase: args.phase } : {}),
    });
    return answer({ ...page });
  },
};
