import { listRecipes } from "../../control/recipes.ts";
import { answer, type ToolDefinition } from "../tool-definition.ts";

export const listRecipesTool: ToolDefinition = {
  name: "list_recipes",
  description: `List the loop recipes phaseloop can run: its own (such as "execute-review") and those of packages installed in the workdir (as "PACKAGE/RECIPE"), each with a one-line description.

Use it before start_run when the user asks for a kind of loop rather than naming a pipeline file: pass a recipe's name as start_run's "recipe". Takes no arguments.

Example: list_recipes {} → {"recipes": [{"name": "execute-review", "description": "…", "package": "phaseloop"}, …]}`,
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  annotations: { title: "List recipes", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(_args, context) {
    const recipes = await listRecipes(context.workdir);
    return answer({ recipes: recipes.map(({ name, description, package: pkg, version }) => ({ name, description, package: pkg, ...(version ? { version } : {}) })) });
  },
};
