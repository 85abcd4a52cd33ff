/** The recipes a run can be started from: phaseloop's own, then those of the packages installed for the workdir. */
import { listRecipes as ownRecipeList, RECIPES_DIR } from "./own-recipes.ts";
import { packageRecipes } from "./package-recipes.ts";
import { join } from "node:path";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { ControlError } from "./control-error.ts";
import type { Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";

export interface Recipe {
  /** What `recipe` takes: NAME for phaseloop's own, PACKAGE/NAME for a package's. */
  name: string;
  description: string;
  package: string;
  version?: string;
  /** The recipe's file. */
  file: string;
}

/** What `phaseloop recipes --json` lists, with each recipe's file. */
export async function listRecipes(workdir: string, host: Host = nodeHost): Promise<Recipe[]> {
  const own = (await ownRecipeList(host.files)).map((r) => ({ name: r.name, description: r.description, package: "phaseloop", file: join(RECIPES_DIR, r.file) }));
  const others = (await packageRecipes(workdir, host.files)).map((r) => ({ name: r.id, description: r.description, package: r.package, ...(r.version ? { version: r.version } : {}), file: r.file }));
  return [...own, ...others];
}

/** A recipe's file, by its name. */
export async function findRecipe(name: string, workdir: string, host: Host = nodeHost): Promise<string> {
  if (typeof name !== "string" || name === "") throw new ControlError("BAD_ARGUMENT", "the recipe name is empty");
  const all = await listRecipes(workdir, host);
  const found = all.find((r) => r.name === name);
  if (found) return found.file;
  const hint = didYouMean(name, all.map((r) => r.name));
  throw new ControlError("PATH_NOT_FOUND", `no recipe "${name}"`, { hint: hint ?? `the recipes: ${all.map((r) => r.name).join(", ")}` });
}
