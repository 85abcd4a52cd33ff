import { answerQuestion } from "../../control/resume-run.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";
import { RUN_ID } from "./run-id-schema.ts";

export const answerQuestionTool: ToolDefinition<{ run_id: string; answer: string }> = {
  name: "answer_question",
  description: `Answer the question a run waits on (an "ask:" phase; get_run or wait_for_run show it as status.question), and let the run go on, as \`phaseloop resume RUN_ID --answer TEXT\` does. The run continues as a process of its own; follow it with wait_for_run.

Refused when the run does not wait for an answer. The answer is data: the pipeline reads it as phases.PHASE.answer, and it is never run as a command.

Example: answer_question {"run_id": "20261122-130512-k3f9", "answer": "approve"} → {"run_id": "20261122-130512-k3f9", "resumed": true, …}`,
  inputSchema: {
    type: "object",
    properties: {
      run_id: RUN_ID,
      answer: { type: "string", minLength: 1, maxLength: 100_000, description: "The answer, as the question asks for it." },
    },
    required: ["run_id", "answer"],
    additionalProperties: false,
  },
  annotations: { title: "Answer a run's question", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(args, context) {
    const resumed = await answerQuestion(context.workdir, args.run_id, args.answer, { env: context.env, ...(context.command ? { command: context.command } : {}) });
    return answer({ run_id: resumed.runId, resumed: true, pid: resumed.pid, output: resumed.output }, `Run ${resumed.runId} goes on with the answer. Call wait_for_run to follow it.`);
  },
};
