import { dirname, join, relative, resolve, sep } from "node:path";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { hostOf, parseCommandArgs, type CliIo } from "./cli-io.ts";
import { extendingFile, extendsSpecifier, ownRecipes, packageRecipes, relativeFilesOf, schemaPathFor, withSchemaLine } from "../control/package-recipes.ts";

/** What `phaseloop init` copies when no recipe is named: the simplest loop there is. */
export const STARTER_RECIPE = "ralph";

const USAGE = `Usage: phaseloop init [RECIPE | PACKAGE/RECIPE] [options]
       phaseloop init --extends RECIPE | PACKAGE/RECIPE [options]

Copies a recipe (RECIPE.yaml and its folder of prompts and scripts) into DIR
(default: ./pipelines), so a team can commit it and adapt it. Without RECIPE it
copies ${STARTER_RECIPE}: one prompt repeated until a check command passes.
PACKAGE/RECIPE names a recipe of an installed package (see: phaseloop recipes).

Options:
  --extends RECIPE   write a short file that extends the recipe instead of
                     copying it: its improvements reach it when the package is
                     updated
  --dir DIR          where to write (default: ./pipelines)
  --force            overwrite files that exist (refused otherwise)
  -h, --help         this text
`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--force"], ["--dir", "--extends"]);
  const base = parsed.ok ? parsed.args.values.get("--extends") : undefined;
  if (!parsed.ok || parsed.args.positionals.length > (base === undefined ? 1 : 0)) {
    io.stderr(`phaseloop init: ${parsed.ok ? (base === undefined ? "name at most one recipe" : "--extends names the recipe; give no other") : parsed.message}\n${USAGE}`);
    return 2;
  }
  const name = (base ?? parsed.args.positionals[0] ?? STARTER_RECIPE).replace(/\.ya?ml$/, "");
  const host = hostOf(io);
  const { files } = host;
  const exists = (path: string): boolean => {
    try {
      return files.stat(path) !== undefined;
    } catch {
      return false;
    }
  };
  const own = await ownRecipes(files);
  const recipes = [...own, ...(await packageRecipes(io.cwd, files))];
  const recipe = recipes.find((r) => r.id === name || (r.package === "phaseloop" && r.name === name));
  if (!recipe) {
    const names = recipes.map((r) => (r.package === "phaseloop" ? r.name : r.id));
    const hint = didYouMean(name, names);
    io.stderr(`phaseloop init: no recipe "${name}"${hint ? ` (${hint})` : ""}; recipes: ${names.join(", ")}\n`);
    return 2;
  }
  const dir = resolve(io.cwd, parsed.args.values.get("--dir") ?? "pipelines");
  const force = parsed.args.flags.has("--force");
  const target = join(dir, `${recipe.name}.yaml`);
  const copies: [string, string][] = base !== undefined ? [] : [[recipe.file, target]];
  if (base === undefined && recipe.folder) copies.push([recipe.folder, join(dir, recipe.name)]);
  // the files it extends or includes by relative path come along
  if (base === undefined) for (const f of relativeFilesOf(recipe.file, files)) if (!recipe.folder || !f.startsWith(recipe.folder + sep)) copies.push([f, join(dir, relative(dirname(recipe.file), f))]);
  const clashes = [];
  for (const to of base !== undefined ? [target] : copies.map((c) => c[1])) if (exists(to)) clashes.push(relative(io.cwd, to) || to);
  if (clashes.length && !force) {
    io.stderr(`phaseloop init: ${clashes.join(", ")} already exist${clashes.length === 1 ? "s" : ""}; use --force to overwrite\n`);
    return 2;
  }
  files.mkdir(dir);
  for (const [, to] of copies) files.mkdir(dirname(to));
  if (base !== undefined) {
    files.writeText(target, extendingFile(recipe, await extendsSpecifier(recipe, target, host), schemaPathFor(target, files), recipe.name, files));
  } else {
    for (const [from, to] of copies) files.copy(from, to);
    // the copy's editor line points at the installed schema, wherever the copy is
    files.writeText(target, withSchemaLine(files.readText(target), schemaPathFor(target, files)));
  }
  const shown = relative(io.cwd, target) || target;
  const what = base !== undefined ? ` (extends ${recipe.id})` : copies.length > 1 ? ` and ${relative(io.cwd, join(dir, recipe.name))}/` : "";
  io.stdout(`created ${shown}${what}\n\nNext:\n  npx phaseloop validate ${shown}${base !== undefined ? `\n  npx phaseloop validate --print ${shown}` : ""}\n  npx phaseloop run ${shown} --dry-run\n`);
  return 0;
}
