/** The recipes shipped in phaseloop's own pipelines/ folder, with the description each file gives. */
import { fileURLToPath } from "node:url";
import type { HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";

/** The recipes shipped in the package's pipelines/ folder. */
export const RECIPES_DIR = fileURLToPath(new URL("../../pipelines/", import.meta.url));

export interface RecipeInfo {
  name: string;
  file: string;
  description: string;
}

export async function listRecipes(on: HostFiles = nodeFiles): Promise<RecipeInfo[]> {
  const files = on.readdir(RECIPES_DIR).filter((f) => f.endsWith(".yaml")).sort();
  const out: RecipeInfo[] = [];
  for (const f of files) {
    const text = on.readText(RECIPES_DIR + f);
    const description = /^description:\s*(.+)$/m.exec(text)?.[1]?.trim().replace(/^["']|["']$/g, "") ?? "";
    out.push({ name: f.replace(/\.yaml$/, ""), file: f, description });
  }
  return out;
}
