/** The tools of `phaseloop mcp`, in the order a model meets them. */
import type { ToolDefinition } from "../tool-definition.ts";
import { answerQuestionTool } from "./answer-question.ts";
import { getRunTool } from "./get-run.ts";
import { listRecipesTool } from "./list-recipes.ts";
import { listRunsTool } from "./list-runs.ts";
import { readRunLogTool } from "./read-run-log.ts";
import { resumeRunTool } from "./resume-run.ts";
import { startRunTool } from "./start-run.ts";
import { stopRunTool } from "./stop-run.ts";
import { validatePipelineTool } from "./validate-pipeline.ts";
import { waitForRunTool } from "./wait-for-run.ts";

export const TOOLS: readonly ToolDefinition<never>[] = [listRecipesTool, validatePipelineTool, startRunTool, listRunsTool, getRunTool, readRunLogTool, waitForRunTool, answerQuestionTool, stopRunTool, resumeRunTool] as ToolDefinition<never>[];
