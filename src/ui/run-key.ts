/**
 * A run's key on the page: its folder relative to the workdir's runs, `ID`,
 * `ID/sub/0003-PHASE` (a sub-pipeline's run), `ID/lanes/TASK` (a lane), and so
 * on down. A key comes from the address bar, so it is checked segment by
 * segment: nothing in it can name a folder outside the run it starts from.
 */

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;

/** The folder names of a key (`["ID", "sub", "0003-x"]`), or undefined when it is not one. */
export function parseRunKey(key: string): string[] | undefined {
  const parts = key.split("/");
  if (parts.length % 2 !== 1 || parts.length > 21) return undefined;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (i % 2 === 1) {
      if (part !== "sub" && part !== "lanes") return undefined;
    } else if (!SEGMENT.test(part) || part.includes("..")) return undefined;
  }
  return parts;
}

/** The top-level run a key belongs to. */
export function rootRunOf(key: string): string {
  return key.split("/")[0]!;
}

/** A phase run's folder name (`0007-review`): checked like a key's segment. */
export function isPhaseDirName(dir: string): boolean {
  return /^[0-9]{4,}-[A-Za-z0-9_.-]{1,200}$/.test(dir) && !dir.includes("..");
}
