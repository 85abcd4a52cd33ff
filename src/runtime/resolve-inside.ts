import { existsSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

/** Resolve a path inside the workdir; refuses `..`, absolute paths elsewhere, and symlinks that lead out. */
export function resolveInside(workdir: string, path: string): string | undefined {
  const abs = resolve(workdir, path);
  const escapes = (from: string, to: string) => {
    const rel = relative(from, to);
    return rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  };
  if (escapes(workdir, abs)) return undefined;
  let probe = abs;
  while (!existsSync(probe) && probe !== dirname(probe)) probe = dirname(probe);
  try {
    if (escapes(realpathSync(workdir), realpathSync(probe))) return undefined;
  } catch {
    return undefined;
  }
  return abs;
}
