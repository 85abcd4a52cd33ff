import { placeInside } from "./open-inside.ts";

/** Resolve a path inside the workdir; refuses `..`, absolute paths elsewhere, and symlinks that lead out. */
export function resolveInside(workdir: string, path: string): string | undefined {
  const placed = placeInside(workdir, path);
  return placed.ok ? placed.abs : undefined;
}
