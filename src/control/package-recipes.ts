/**
 * Recipes that installed packages publish: a package says where its recipes
 * are in its package.json (`"phaseloop": { "recipes": "pipelines" }`), and
 * `phaseloop recipes` lists them as PACKAGE/RECIPE. phaseloop's own six
 * recipes are published the same way. Also: the `$schema` line a copied or
 * written file gets, a path that resolves offline to the installed schema.
 * Files are the host's, given by the caller.
 */
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { isPromptPath } from "../pipeline/paths.ts";
import { resolveSpecifier } from "../pipeline/resolve-specifier.ts";
import { readHostOf, type Host, type HostFiles } from "../host/host.ts";

/** The root of the phaseloop package that is running. */
export const PACKAGE_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The schema shipped in it. */
export const SCHEMA_FILE = join(PACKAGE_ROOT, "schemas", "pipeline.schema.json");

export interface PackageRecipe {
  /** PACKAGE/RECIPE, as `init` takes it. */
  id: string;
  package: string;
  version?: string;
  name: string;
  /** The recipe's YAML file, absolute. */
  file: string;
  /** Its folder of prompts and scripts, when it has one. */
  folder?: string;
  description: string;
}

interface Manifest {
  name?: string;
  version?: string;
  phaseloop?: { recipes?: unknown };
}

/** The packages installed from `cwd` upward (nearest first), by name. */
function installedPackages(files: HostFiles, cwd: string): Map<string, string> {
  const found = new Map<string, string>();
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const nm = join(dir, "node_modules");
    for (const entry of safeList(files, nm)) {
      if (entry.startsWith(".")) continue;
      const names = entry.startsWith("@") ? safeList(files, join(nm, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) if (!found.has(name)) found.set(name, join(nm, name));
    }
    if (dirname(dir) === dir) break;
  }
  return found;
}

function safeList(files: HostFiles, dir: string): string[] {
  try {
    return files.readdir(dir);
  } catch {
    return [];
  }
}

function manifestOf(files: HostFiles, dir: string): Manifest | undefined {
  try {
    return JSON.parse(files.readText(join(dir, "package.json"))) as Manifest;
  } catch {
    return undefined;
  }
}

/** The recipes folder a package declares (inside the package), or undefined. */
function recipesFolder(pkgDir: string, manifest: Manifest): string | undefined {
  const declared = manifest.phaseloop?.recipes;
  if (typeof declared !== "string" || declared.trim() === "") return undefined;
  const folder = resolve(pkgDir, declared);
  return folder === pkgDir || folder.startsWith(pkgDir + sep) ? folder : undefined;
}

async function recipesIn(on: HostFiles, pkg: string, version: string | undefined, folder: string): Promise<PackageRecipe[]> {
  let files: string[];
  try {
    files = on.readdir(folder).filter((f) => f.endsWith(".yaml") || f.endsWith(".yml")).sort();
  } catch {
    return [];
  }
  const out: PackageRecipe[] = [];
  for (const f of files) {
    const name = f.replace(/\.ya?ml$/, "");
    let text = "";
    try {
      text = on.readText(join(folder, f));
    } catch {
      // unreadable: not a recipe
    }
    if (!/^phaseloop:\s*1\s*$/m.test(text)) continue; // an include or another YAML file, not a pipeline
    const description = /^description:\s*(.+)$/m.exec(text)?.[1]?.trim().replace(/^["']|["']$/g, "") ?? "";
    const sub = join(folder, name);
    out.push({ id: `${pkg}/${name}`, package: pkg, ...(version ? { version } : {}), name, file: join(folder, f), ...(on.exists(sub) ? { folder: sub } : {}), description });
  }
  return out;
}

/** Recipes of the installed packages that declare some (phaseloop itself excluded: its own come first, by name). */
export async function packageRecipes(cwd: string, files: HostFiles): Promise<PackageRecipe[]> {
  const out: PackageRecipe[] = [];
  for (const [name, dir] of [...installedPackages(files, cwd)].sort((a, b) => a[0].localeCompare(b[0]))) {
    if (name === "phaseloop") continue;
    const manifest = manifestOf(files, dir);
    const folder = manifest && recipesFolder(dir, manifest);
    if (folder) out.push(...(await recipesIn(files, name, manifest.version, folder)));
  }
  return out;
}

/** phaseloop's own recipes, as a package publishes them. */
export async function ownRecipes(files: HostFiles): Promise<PackageRecipe[]> {
  const manifest = manifestOf(files, PACKAGE_ROOT) ?? {};
  const folder = recipesFolder(PACKAGE_ROOT.replace(/[\\/]$/, ""), manifest) ?? join(PACKAGE_ROOT, "pipelines");
  return recipesIn(files, "phaseloop", manifest.version, folder);
}

/**
 * The `$schema` path for a file written at `file`: the schema of the phaseloop
 * installed in the nearest node_modules (so the line keeps working for the
 * whole team), else the schema of the phaseloop that is running.
 */
export function schemaPathFor(file: string, files: HostFiles): string {
  const from = dirname(resolve(file));
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, "node_modules", "phaseloop", "schemas", "pipeline.schema.json");
    if (files.exists(candidate)) return toPosix(relative(from, candidate));
    if (dirname(dir) === dir) break;
  }
  return toPosix(relative(from, SCHEMA_FILE));
}

function toPosix(p: string): string {
  return p.split(sep).join("/");
}

/** Replace (or add) a YAML file's `# yaml-language-server: $schema=` line. */
export function withSchemaLine(text: string, schema: string): string {
  const line = `# yaml-language-server: $schema=${schema}`;
  return /^# yaml-language-server: \$schema=.*$/m.test(text) ? text.replace(/^# yaml-language-server: \$schema=.*$/m, line) : `${line}\n${text}`;
}

/**
 * The files a recipe names by relative path (`extends: ./x.yaml`, `include:
 * [./agents.yaml]`), and theirs, inside the recipe's folder: a copy takes them along.
 */
export function relativeFilesOf(file: string, files: HostFiles, root = dirname(file), seen = new Set<string>()): string[] {
  let doc: { extends?: unknown; include?: unknown } | undefined;
  try {
    doc = parseYaml(files.readText(file)) as typeof doc;
  } catch {
    return [];
  }
  const named = [doc?.extends, ...(Array.isArray(doc?.include) ? doc.include : [])].filter((s): s is string => typeof s === "string" && /^\.\.?\//.test(s));
  const out: string[] = [];
  for (const spec of named) {
    const path = resolve(dirname(file), spec);
    if (seen.has(path) || !path.startsWith(root + sep) || !files.exists(path)) continue;
    seen.add(path);
    out.push(path, ...relativeFilesOf(path, files, root, seen));
  }
  // prompt files, and files reached through {{ pipeline.dir }}
  const phases = (doc as { phases?: Record<string, { prompt?: unknown }> } | undefined)?.phases;
  const used = Object.values(phases && typeof phases === "object" ? phases : {}).map((p) => p?.prompt).filter((p): p is string => typeof p === "string" && isPromptPath(p)).map((p) => p.trim());
  for (const m of JSON.stringify(doc ?? {}).matchAll(/\{\{\s*pipeline\.dir\s*\}\}\/([\w./-]+)/g)) used.push(m[1]!);
  for (const rel of used) {
    const path = resolve(dirname(file), rel);
    if (seen.has(path) || !path.startsWith(root + sep) || !files.exists(path)) continue;
    seen.add(path);
    out.push(path);
  }
  return out;
}

/** The `extends:` value that names a recipe from a file at `file`: its package path when that resolves to it, else a relative path. */
export async function extendsSpecifier(recipe: PackageRecipe, file: string, on: Host): Promise<string> {
  const host = readHostOf(on);
  for (const spec of [`${recipe.package}/${recipe.name}.yaml`, `${recipe.id}`]) {
    const r = await resolveSpecifier(spec, resolve(file), host);
    if (r.ok && resolve(r.file) === resolve(recipe.file)) return spec;
  }
  const rel = toPosix(relative(dirname(resolve(file)), recipe.file));
  return rel.startsWith(".") ? rel : `./${rel}`;
}

/** The short file `init --extends` writes: the base, and its params as comments to override. */
export function extendingFile(recipe: PackageRecipe, specifier: string, schema: string, name: string, files: HostFiles): string {
  const text = files.readText(recipe.file);
  const params = /^params:\s*\n((?:[ \t]+.*\n|\s*\n)*)/m.exec(text)?.[1] ?? "";
  const names = [...params.matchAll(/^  ([A-Za-z_][A-Za-z0-9_]*):/gm)].map((m) => m[1]!);
  const lines = [
    `# yaml-language-server: $schema=${schema}`,
    `#`,
    `# ${name}: extends ${recipe.id}${recipe.version ? ` (${recipe.version})` : ""}. Write here only what differs:`,
    `# maps merge key by key and this file wins, lists are replaced whole, null removes.`,
    `# See what the merge produces: phaseloop validate --print THIS_FILE`,
    `phaseloop: 1`,
    `name: ${name}`,
    `extends: "${specifier}"`,
  ];
  if (names.length) {
    lines.push(`# params:`);
    for (const p of names) lines.push(`#   ${p}: { default: … }`);
  }
  lines.push(`# agents:  { worker: { preset: claude, model: sonnet } }`, `# stop:    { max_iterations: 10 }`, ``);
  return lines.join("\n");
}
