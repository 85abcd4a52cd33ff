import { cp, mkdir, stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { parseCommandArgs, type CliIo } from "./cli-io.ts";
import { listRecipes, RECIPES_DIR } from "./recipes.ts";

/** What `phaseloop init` copies when no recipe is named: the simplest loop there is. */
export const STARTER_RECIPE = "ralph";

const USAGE = `Usage: phaseloop init [RECIPE] [--dir DIR] [--force]

Copies a recipe (RECIPE.yaml and its folder of prompts and scripts) into DIR
(default: ./pipelines), so a team can commit it and adapt it. Without RECIPE it
copies ${STARTER_RECIPE}: one prompt repeated until a check command passes. Refuses
to overwrite existing files unless --force. See: phaseloop recipes
`;

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--force"], ["--dir"]);
  if (!parsed.ok || parsed.args.positionals.length > 1) {
    io.stderr(`phaseloop init: ${parsed.ok ? "name at most one recipe" : parsed.message}\n${USAGE}`);
    return 2;
  }
  const name = (parsed.args.positionals[0] ?? STARTER_RECIPE).replace(/\.yaml$/, "");
  const recipes = await listRecipes();
  const recipe = recipes.find((r) => r.name === name);
  if (!recipe) {
    const hint = didYouMean(name, recipes.map((r) => r.name));
    io.stderr(`phaseloop init: no recipe "${name}"${hint ? ` (${hint})` : ""}; recipes: ${recipes.map((r) => r.name).join(", ")}\n`);
    return 2;
  }
  const dir = resolve(io.cwd, parsed.args.values.get("--dir") ?? "pipelines");
  const force = parsed.args.flags.has("--force");
  const copies: [string, string][] = [[join(RECIPES_DIR, recipe.file), join(dir, recipe.file)]];
  if (await exists(join(RECIPES_DIR, name))) copies.push([join(RECIPES_DIR, name), join(dir, name)]);
  const clashes = [];
  for (const [, to] of copies) if (await exists(to)) clashes.push(relative(io.cwd, to) || to);
  if (clashes.length && !force) {
    io.stderr(`phaseloop init: ${clashes.join(", ")} already exist${clashes.length === 1 ? "s" : ""}; use --force to overwrite\n`);
    return 2;
  }
  await mkdir(dir, { recursive: true });
  for (const [from, to] of copies) await cp(from, to, { recursive: true, force: true });
  const shown = relative(io.cwd, join(dir, recipe.file)) || join(dir, recipe.file);
  io.stdout(`created ${shown}${copies.length > 1 ? ` and ${relative(io.cwd, join(dir, name))}/` : ""}\n\nNext:\n  phaseloop validate ${shown}\n  phaseloop run ${shown} --dry-run\n`);
  return 0;
}
