/** The recipes shipped in phaseloop's own pipelines/ folder, with the description each file gives. */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

/** The recipes shipped in the package's pipelines/ folder. */
export const RECIPES_DIR = fileURLToPath(new URL("../../pipelines/", import.meta.url));

export interface RecipeInfo {
  name: string;
  file: string;
  description: string;
}

export async function listRecipes(): Promise<RecipeInfo[]> {
  const files = (await readdir(RECIPES_DIR)).filter((f) => f.endsWith(".yaml")).sort();
  const out: RecipeInfo[] = [];
  for (const f of files) {
    const text = await readFile(RECIPES_DIR + f, "utf8");
    const description = /^description:\s*(.+)$/m.exec(text)?.[1]?.trim().replace(/^["']|["']$/g, "") ?? "";
    out.push({ name: f.replace(/\.yaml$/, ""), file: f, description });
  }
  return out;
}
