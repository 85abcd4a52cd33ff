/**
 * The programs phaseloop runs itself (git, sh, bwrap, socat, find), found
 * once from a PATH an agent cannot write into: no relative entry, nothing
 * inside the workdir or the folder phaseloop was started from, no
 * `node_modules` folder (`npx` puts `node_modules/.bin` first), no folder
 * anyone may write. Each is then started by its absolute path, so a `git`
 * an agent planted is never phaseloop's.
 */
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, isAbsolute, join, relative, resolve, sep } from "node:path";
import process from "node:process";

const roots = new Set<string>();
const found = new Map<string, string>();
let path: string | undefined;
let pathFrom: string | undefined;

const inside = (dir: string, root: string) => {
  const r = relative(root, dir);
  return r === "" || (!r.startsWith("..") && !isAbsolute(r));
};

/** Whether a PATH entry is one an agent could have put a program into. */
export function untrustedPathEntry(entry: string, workdirs: Iterable<string>): boolean {
  if (entry === "" || !isAbsolute(entry)) return true;
  const dir = resolve(entry);
  if (dir.split(sep).includes("node_modules")) return true;
  for (const root of workdirs) if (inside(dir, root)) return true;
  try {
    const st = statSync(dir);
    // a folder anyone may write (and /tmp, sticky or not)
    if ((st.mode & 0o002) !== 0) return true;
  } catch {
    return true; // missing now: whoever makes it later decides what it holds
  }
  return false;
}

/**
 * Fix the programs phaseloop runs itself, with `workdir` (and the folder it
 * was started from) left out of the PATH they are looked up in. Called when
 * a run starts, before any agent; later calls with a new workdir add to it.
 */
export function resolveOwnPrograms(workdir?: string): void {
  const before = roots.size;
  roots.add(resolve(process.cwd()));
  if (workdir !== undefined) roots.add(resolve(workdir));
  if (roots.size !== before) {
    path = undefined;
    found.clear();
  }
  for (const name of ["git", "sh", "bwrap", "socat", "find"]) ownProgram(name);
}

/** The PATH phaseloop's own programs are looked up in (and that its git runs its helpers with). */
export function ownPath(): string {
  // phaseloop's own PATH is read again only when phaseloop itself changes it
  if (path !== undefined && pathFrom === process.env.PATH) return path;
  if (pathFrom !== process.env.PATH) found.clear();
  pathFrom = process.env.PATH;
  if (roots.size === 0) roots.add(resolve(process.cwd()));
  const entries = (process.env.PATH ?? "").split(delimiter).filter((e) => !untrustedPathEntry(e, roots));
  return (path = [...new Set(entries)].join(delimiter));
}

/** The absolute path of one of phaseloop's own programs, or its bare name when none is installed (a spawn then fails). */
export function ownProgram(name: string): string {
  const dirs = ownPath().split(delimiter);
  const known = found.get(name);
  if (known !== undefined) return known;
  let hit = name;
  for (const dir of dirs) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (!statSync(candidate).isFile()) continue;
      hit = candidate;
      break;
    } catch {
      // not here
    }
  }
  // a name not found stays unresolved: it is not cached, so an install later is seen
  if (hit !== name) found.set(name, hit);
  return hit;
}

/** The programs phaseloop runs itself by name: a command starting with one of them is started by its absolute path. */
export const OWN_PROGRAMS = new Set(["git", "sh", "bwrap", "socat", "find"]);
