/**
 * Where a file named in `extends:`, `include:` (or any other reference to a
 * pipeline file) is: `./x.yaml` and `../x.yaml` relative to the file that
 * names it, a bare specifier (`@acme/loops/x.yaml`, `team-loops/x.yaml`) the
 * way Node resolves a package subpath: from the naming file's folder upward
 * through `node_modules`, honouring the package's `exports`. Nothing is ever
 * fetched. Pure: files are read through the host.
 */
import { dirnameOf, joinPath } from "./paths.ts";

/** What resolution needs from the world. */
export interface ResolveHost {
  /** The file's text; undefined when it does not exist; `problem` when it cannot be read. */
  readFile(path: string): Promise<string | undefined | { problem: string }>;
  /** The current directory, absolute: lets a relative path walk up past "." to find node_modules. */
  cwd?: string;
}

/** The package a resolved file belongs to. */
export interface PackageInfo {
  name: string;
  /** From its package.json; undefined when it has none. */
  version?: string;
  /** The package's folder. */
  dir: string;
}

export type Resolution =
  | { ok: true; file: string; package?: PackageInfo }
  | { ok: false; message: string; hint?: string };

/** Conditions tried in `exports` condition objects, in the package's own key order. */
export const EXPORT_CONDITIONS = ["phaseloop", "node", "import", "default"] as const;

/**
 * Resolve `specifier` as named in `fromFile`. A relative result stays in the
 * form `fromFile` has (relative to the current directory, or absolute).
 */
export async function resolveSpecifier(specifier: string, fromFile: string, host: ResolveHost): Promise<Resolution> {
  const spec = specifier.trim();
  if (spec === "") return { ok: false, message: "the file name is empty" };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec) || /^(https?|git|file|npm|jsr):/i.test(spec)) {
    return { ok: false, message: `"${spec}" is a URL; phaseloop reads files only and fetches nothing`, hint: "install the package (npm install) and name the file by its package path, such as \"@acme/loops/x.yaml\"" };
  }
  if (spec.startsWith("/") || spec === "." || spec === ".." || spec.startsWith("./") || spec.startsWith("../")) {
    return { ok: true, file: joinPath(dirnameOf(fromFile), spec) };
  }
  if (spec.startsWith("\\") || /^[A-Za-z]:[\\/]/.test(spec)) return { ok: false, message: `"${spec}" is not a path phaseloop understands`, hint: "write paths with \"/\", starting with \"./\" or \"../\"" };
  const parsed = parseBare(spec);
  if (!parsed) return { ok: false, message: `"${spec}" is neither a relative path nor a package path`, hint: "start a path in this repository with \"./\" or \"../\"; name a file in a package as \"PACKAGE/FILE\", such as \"@acme/loops/x.yaml\"" };
  const { name, subpath } = parsed;
  for (const dir of ancestors(dirnameOf(fromFile), host.cwd)) {
    const pkgDir = joinPath(dir, `node_modules/${name}`);
    const read = await host.readFile(`${pkgDir}/package.json`);
    if (read === undefined) continue;
    if (typeof read === "object") return { ok: false, message: `the package "${name}" cannot be read: ${read.problem}` };
    let manifest: { version?: unknown; exports?: unknown };
    try {
      manifest = JSON.parse(read) as typeof manifest;
    } catch {
      return { ok: false, message: `the package "${name}" has a package.json that is not JSON (${pkgDir}/package.json)` };
    }
    const pkg: PackageInfo = { name, dir: pkgDir, ...(typeof manifest.version === "string" ? { version: manifest.version } : {}) };
    if (subpath === ".") return { ok: false, message: `"${spec}" names the package "${name}", not a file in it`, hint: `name a file in it, such as "${name}/recipe.yaml"` };
    if (manifest.exports === undefined || manifest.exports === null) return { ok: true, file: joinPath(pkgDir, subpath), package: pkg };
    const target = exportTarget(manifest.exports, subpath);
    if (target === undefined || target === null) {
      const listed = exportedSubpaths(manifest.exports);
      return { ok: false, message: `the package "${name}" does not export "${subpath}"`, hint: listed.length ? `its exports: ${listed.slice(0, 8).join(", ")}` : "its package.json `exports` lists what other packages may use" };
    }
    if (!target.startsWith("./") || target.split("/").includes("..") || target.split("/").includes("node_modules")) {
      return { ok: false, message: `the package "${name}" exports "${subpath}" as "${target}", which is not a path inside the package` };
    }
    return { ok: true, file: joinPath(pkgDir, target), package: pkg };
  }
  return { ok: false, message: `the package "${name}" is not installed (no node_modules/${name} from ${dirnameOf(fromFile)} upward)`, hint: `install it: npm install ${name}` };
}

/** `@scope/name/sub/path` → name and "./sub/path"; undefined when it is no package path. */
export function parseBare(spec: string): { name: string; subpath: string } | undefined {
  const parts = spec.split("/");
  const scoped = spec.startsWith("@");
  const nameParts = scoped ? parts.slice(0, 2) : parts.slice(0, 1);
  if (nameParts.length < (scoped ? 2 : 1) || nameParts.some((p) => p === "" || p === "." || p === "..")) return undefined;
  const name = nameParts.join("/");
  if (!/^(@[a-z0-9][\w.~-]*\/)?[a-z0-9][\w.~-]*$/i.test(name)) return undefined;
  const rest = parts.slice(nameParts.length);
  if (rest.some((p) => p === "" || p === "." || p === "..")) return rest.length === 0 ? { name, subpath: "." } : undefined;
  return { name, subpath: rest.length ? `./${rest.join("/")}` : "." };
}

/** The folder and every folder above it (absolute when cwd is known). */
function ancestors(dir: string, cwd: string | undefined): string[] {
  const start = dir.startsWith("/") || cwd === undefined ? dir : joinPath(cwd, dir);
  const out: string[] = [];
  let d = start;
  for (let i = 0; i < 256; i++) {
    if (!d.endsWith("/node_modules") && d !== "node_modules") out.push(d); // as Node: no node_modules/node_modules
    const up = dirnameOf(d);
    if (up === d || (!d.startsWith("/") && (d === "." || d.split("/").every((p) => p === "..")))) break;
    d = up;
  }
  return out;
}

/** Node's PACKAGE_EXPORTS_RESOLVE for one subpath: the target, null when excluded, undefined when not exported. */
export function exportTarget(exports: unknown, subpath: string): string | null | undefined {
  const map = isSubpathMap(exports) ? (exports as Record<string, unknown>) : { ".": exports };
  if (Object.prototype.hasOwnProperty.call(map, subpath) && !subpath.includes("*")) return conditionTarget(map[subpath], undefined);
  let best: { key: string; star: string } | undefined;
  for (const key of Object.keys(map)) {
    const star = key.indexOf("*");
    if (star < 0 || key.indexOf("*", star + 1) >= 0) continue;
    const prefix = key.slice(0, star);
    const suffix = key.slice(star + 1);
    if (subpath.length >= key.length && subpath.startsWith(prefix) && subpath.endsWith(suffix) && subpath !== prefix) {
      if (!best || prefix.length > best.key.indexOf("*") || (prefix.length === best.key.indexOf("*") && key.length > best.key.length)) {
        best = { key, star: subpath.slice(prefix.length, subpath.length - suffix.length) };
      }
    }
  }
  if (best) return conditionTarget(map[best.key], best.star);
  // the legacy folder form: "./dir/": "./lib/"
  for (const key of Object.keys(map).filter((k) => k.endsWith("/")).sort((a, b) => b.length - a.length)) {
    if (!subpath.startsWith(key)) continue;
    const t = conditionTarget(map[key], undefined);
    return typeof t === "string" ? t + subpath.slice(key.length) : t;
  }
  return undefined;
}

function isSubpathMap(exports: unknown): boolean {
  if (!exports || typeof exports !== "object" || Array.isArray(exports)) return false;
  return Object.keys(exports).some((k) => k.startsWith("."));
}

function conditionTarget(target: unknown, star: string | undefined): string | null | undefined {
  if (target === null) return null;
  if (typeof target === "string") return star === undefined ? target : target.split("*").join(star);
  if (Array.isArray(target)) {
    for (const t of target) {
      const r = conditionTarget(t, star);
      if (typeof r === "string") return r;
    }
    return undefined;
  }
  if (typeof target === "object") {
    for (const [cond, value] of Object.entries(target as Record<string, unknown>)) {
      if (!(EXPORT_CONDITIONS as readonly string[]).includes(cond)) continue;
      const r = conditionTarget(value, star);
      if (r !== undefined) return r;
    }
  }
  return undefined;
}

/** The subpaths a package exports, for hints. */
export function exportedSubpaths(exports: unknown): string[] {
  return isSubpathMap(exports) ? Object.keys(exports as object).filter((k) => conditionTarget((exports as Record<string, unknown>)[k], "x") != null) : ["."];
}

/** A path relative to a folder (both absolute, or both relative to the same folder); undefined when it cannot be told. */
export function relativePath(fromDir: string, to: string): string | undefined {
  if (fromDir.startsWith("/") !== to.startsWith("/")) return undefined;
  const a = fromDir.split("/").filter((p) => p !== "" && p !== ".");
  const b = to.split("/").filter((p) => p !== "" && p !== ".");
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.slice(i).includes("..")) return undefined;
  const up = a.slice(i).map(() => "..");
  const rel = [...up, ...b.slice(i)].join("/");
  return rel === "" ? "." : rel;
}
