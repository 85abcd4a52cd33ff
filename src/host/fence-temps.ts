/**
 * The temporary folders of a run's fences, in a folder of the run's own in the OS's temp dir
 * (made 0700 by mkdtemp: nobody else can put anything there): each fenced phase's private
 * /tmp, the cache home its tools write, and the shims. A phase's /tmp is emptied after its
 * phase and taken by the next: making a folder and removing it (and the mount points
 * bubblewrap made in it) at every phase costs more than the rest of the fence's preparation on
 * a disk that discards what is freed.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

let runTemp: string | undefined;
const freeTemps: string[] = [];

/** The run's own temp folder, made on first use. */
export function runTempDir(): string {
  runTemp ??= mkdtempSync(join(tmpdir(), "phaseloop-run-"));
  return runTemp;
}

/** A temp dir for a phase: an emptied one of this run's, else a new one (mode 0700, in the run's own dir). */
export function takeTemp(): string {
  return freeTemps.pop() ?? mkdtempSync(join(runTempDir(), "phase-"));
}

/**
 * Empty a phase's temp dir of everything it wrote and put it back for the next phase; the
 * mount points bubblewrap made there (empty, and covered by a read-only mount while the phase
 * ran) stay. A dir that cannot be emptied is not used again.
 */
export function releaseTemp(dir: string, mountPoints: ReadonlySet<string>): void {
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (mountPoints.has(entry.name) && emptyMountPoint(path)) continue;
      rmSync(path, { recursive: true, force: true });
    }
    // its own mode again, whatever the phase made of its /tmp
    chmodSync(dir, 0o700);
    freeTemps.push(dir);
  } catch {
    // not used again; what stays goes with the run's temp dir, or with the OS's
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // left
    }
  }
}

function emptyMountPoint(path: string): boolean {
  const info = lstatSync(path, { throwIfNoEntry: false });
  if (info === undefined) return false;
  if (info.isDirectory()) return readdirSync(path).length === 0;
  return info.isFile() && info.size === 0;
}

/** The cache home of the run's fenced processes (a folder of the run's temp dir, 0700). */
export function fenceCacheHome(): string {
  const dir = join(runTempDir(), "cache");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** Remove the run's temp folder and all in it (the run's fences are closed). */
export function removeFenceTemps(): void {
  if (runTemp !== undefined) rmSync(runTemp, { recursive: true, force: true });
  runTemp = undefined;
  freeTemps.length = 0;
}
