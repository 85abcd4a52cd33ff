import { ControlError } from "../../control/control-error.ts";
import { validatePipeline } from "../../control/validate-pipeline.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";

export const validatePipelineTool: ToolDefinition<{ path?: string; text?: string }> = {
  name: "validate_pipeline",
  description: `Check a phaseloop pipeline (YAML) without running it: the YAML, the schema and every rule, all problems at once. Give either "path" (a file inside the workdir, relative to it) or "text" (the YAML itself, read as if it were a file at the workdir's root).

Use it after writing or editing a pipeline and before start_run. The answer has "valid" and "diagnostics": records with code, severity, message, file, line, column and hint (the same as \`phaseloop validate --json\`). An invalid pipeline is answered with isError and its diagnostics: fix each one and validate again.

Example: validate_pipeline {"path": "pipelines/loop.yaml"} → {"file": "pipelines/loop.yaml", "valid": false, "diagnostics": [{"code": "UNKNOWN_PHASE", "line": 12, "column": 11, "message": "…", "hint": "did you mean \\"review\\"?", …}]}`,
  inputSchema: {
    type: "object",
    properties: {
      path: { type: "string", minLength: 1, description: "A pipeline file inside the workdir, relative to it, such as pipelines/loop.yaml." },
      text: { type: "string", minLength: 1, description: "The pipeline's YAML text, instead of a path." },
    },
    additionalProperties: false,
  },
  annotations: { title: "Validate a pipeline", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, context) {
    if ((args.path === undefined) === (args.text === undefined)) throw new ControlError("BAD_ARGUMENT", 'give "path" or "text", one of them');
    const result = await validatePipeline(context.workdir, args.path !== undefined ? { path: args.path } : { text: args.text! });
    const errors = result.diagnostics.filter((d) => d.severity === "error").length;
    if (!result.valid) return { value: { ...result }, isError: true, note: `${result.file} is invalid: ${errors} error${errors === 1 ? "" : "s"} (diagnostics below).` };
    return answer({ ...result }, `${result.file} is valid${result.diagnostics.length ? ` (${result.diagnostics.length} warning${result.diagnostics.length === 1 ? "" : "s"})` : ""}.`);
  },
};
