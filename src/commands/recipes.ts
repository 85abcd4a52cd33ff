import { hostOf, type CliIo } from "./cli-io.ts";
import { packageRecipes } from "../control/package-recipes.ts";
import { listRecipes } from "../control/own-recipes.ts";

/** `phaseloop recipes` */
export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(`Usage: phaseloop recipes [options]

Lists the loop recipes that ship with phaseloop, then those of installed
packages that declare some ("phaseloop": { "recipes": "FOLDER" } in their
package.json), as PACKAGE/RECIPE. Copy one with phaseloop init RECIPE, or
extend it with phaseloop init --extends RECIPE.

Options:
  --json       a JSON array: {"name","description","package","version"} each
               (version: for recipes of installed packages)
  -h, --help   this text
`);
    return 0;
  }
  const unknown = argv.find((a) => a !== "--json");
  if (unknown) {
    io.stderr(`phaseloop recipes: unexpected argument "${unknown}"\n`);
    return 2;
  }
  const recipes = [...(await listRecipes(hostOf(io).files)).map((r) => ({ ...r, package: "phaseloop", version: undefined as string | undefined })), ...(await packageRecipes(io.cwd, hostOf(io).files)).map((r) => ({ name: r.id, file: r.file, description: r.description, package: r.package, version: r.version }))];
  if (argv.includes("--json")) {
    io.stdout(JSON.stringify(recipes.map(({ name, description, package: pkg, version }) => ({ name, description, package: pkg, ...(version ? { version } : {}) })), null, 2) + "\n");
    return 0;
  }
  const width = Math.max(...recipes.map((r) => r.name.length));
  for (const r of recipes) io.stdout(`${r.name.padEnd(width)}  ${r.description}\n`);
  io.stdout(`\nCopy one into your repository: phaseloop init RECIPE [--dir DIR]\nExtend one instead (it keeps getting the recipe's improvements): phaseloop init --extends RECIPE\n`);
  return 0;
}
