import { startRun, type ParamValue } from "../../control/start-run.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";

export const startRunTool: ToolDefinition<{ pipeline?: string; recipe?: string; params?: Record<string, ParamValue>; max_iterations?: number }> = {
  name: "start_run",
  description: `Start a phaseloop run of a pipeline in the workdir. The run is a process of its own: it goes on after this call returns, and after this session ends. Returns the run's id at once; follow it with wait_for_run, get_run and read_run_log.

Give "pipeline" (a file inside the workdir, relative to it) or "recipe" (a name from list_recipes). "params" set the pipeline's declared params (as \`--param k=v\` does: strings, numbers or true/false, typed by the pipeline), "max_iterations" lowers or raises its iteration limit. The run keeps the pipeline's own sandbox and tool allowlists: nothing here can loosen them. Only one run at a time per workdir: a busy workdir is refused.

Validate a pipeline you wrote with validate_pipeline first; an invalid one is refused with its diagnostics.

Example: start_run {"pipeline": "pipelines/loop.yaml", "params": {"task_file": "TASK.md"}, "max_iterations": 5} → {"run_id": "20261122-130512-k3f9", …}`,
  inputSchema: {
    type: "object",
    properties: {
      pipeline: { type: "string", minLength: 1, description: "A pipeline file inside the workdir, relative to it." },
      recipe: { type: "string", minLength: 1, description: "A recipe's name (see list_recipes), instead of a pipeline file." },
      params: {
        type: "object",
        description: "The pipeline's params by name: strings, numbers or booleans.",
        additionalProperties: { anyOf: [{ type: "string" }, { type: "number" }, { type: "boolean" }] },
      },
      max_iterations: { type: "integer", minimum: 1, description: "The run's iteration limit, over the pipeline's stop.max_iterations." },
    },
    additionalProperties: false,
  },
  annotations: { title: "Start a run", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(args, context) {
    const started = await startRun({
      workdir: context.workdir,
      ...(args.pipeline !== undefined ? { pipeline: args.pipeline } : {}),
      ...(args.recipe !== undefined ? { recipe: args.recipe } : {}),
      ...(args.params !== undefined ? { params: args.params } : {}),
      ...(args.max_iterations !== undefined ? { maxIterations: args.max_iterations } : {}),
      via: "mcp",
      env: context.env,
      ...(context.command ? { command: context.command } : {}),
    });
    return answer({ run_id: started.runId, pid: started.pid, pipeline: started.pipeline, workdir: started.workdir, output: started.output }, `Run ${started.runId} started. Call wait_for_run {"run_id": "${started.runId}"} to follow it.`);
  },
};
