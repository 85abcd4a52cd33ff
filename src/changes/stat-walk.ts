/**
 * Every entry under a directory with its stat, listed by `find` in one
 * process: the C library's `lstat` per entry, without building a Node
 * `Stats` object (and its dates) for each, which made a walk of 10,000 files
 * several times slower than `find` itself. Each entry comes as the text of
 * its stat, which a caller can compare with the text it saw last time
 * before parsing anything. Undefined where `find` has no `-printf` (BSD,
 * Windows): the caller walks in JavaScript instead.
 */
import { spawnSync } from "node:child_process";
import { ownProgram } from "../host/own-programs.ts";

export interface WalkStat {
  /** As Node's `lstat` reports them. */
  mode: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
}

/** One entry: its stat as text (type, permissions, size, times, inode), its path relative to the walked directory, a link's target. */
export type WalkVisit = (stat: string, path: string, link: string | undefined) => void;

const TYPE_BITS: Record<string, number> = { f: 0o100000, l: 0o120000, d: 0o040000, p: 0o010000, s: 0o140000, c: 0o020000, b: 0o060000 };

let unavailable = false;

/** Visit the entries other than directories under `dir`, directories named in `skip` not entered; false where find cannot. */
export function statWalk(dir: string, skip: ReadonlySet<string>, visit: WalkVisit): boolean {
  if (unavailable) return false;
  const prune: string[] = [];
  for (const name of skip) prune.push(...(prune.length ? ["-o"] : []), "-name", name);
  const args = [".", "-mindepth", "1", ...(prune.length ? ["-type", "d", "(", ...prune, ")", "-prune", "-o"] : []), "-printf", "%y %m %s %T@ %C@ %i\\0%P\\0%l\\0"];
  const r = spawnSync(ownProgram("find"), args, { cwd: dir, maxBuffer: 1024 * 1024 * 1024, stdio: ["ignore", "pipe", "ignore"] });
  if (r.error || (r.status !== 0 && !r.stdout?.length)) {
    // no find, or one without -printf (an unreadable directory inside still lists the rest)
    unavailable = true;
    return false;
  }
  const out = r.stdout;
  let at = 0;
  while (at < out.length) {
    const statEnd = out.indexOf(0, at);
    const pathEnd = statEnd < 0 ? -1 : out.indexOf(0, statEnd + 1);
    const linkEnd = pathEnd < 0 ? -1 : out.indexOf(0, pathEnd + 1);
    if (linkEnd < 0) break;
    // each string decoded on its own: a slice of one big string would keep all of it alive
    const type = out[at];
    if (type !== 0x64 /* d */) visit(out.toString("latin1", at, statEnd), out.toString("utf8", statEnd + 1, pathEnd), type === 0x6c /* l */ ? out.toString("utf8", pathEnd + 1, linkEnd) : undefined);
    at = linkEnd + 1;
  }
  return true;
}

/** The stat a visit's text describes. */
export function parseStat(stat: string): WalkStat {
  const [type = "", perms = "0", size, mtime = "0", ctime = "0", ino] = stat.split(" ");
  return { mode: (TYPE_BITS[type] ?? 0) | Number.parseInt(perms, 8), size: Number(size), mtimeMs: ms(mtime), ctimeMs: ms(ctime), ino: Number(ino) };
}

/** `SECONDS.NANOSECONDS` as Node computes `mtimeMs` from the same two numbers. */
function ms(t: string): number {
  const dot = t.indexOf(".");
  if (dot < 0) return Number(t) * 1e3;
  const sec = Number(t.slice(0, dot));
  const nsec = Number(t.slice(dot + 1, dot + 10).padEnd(9, "0"));
  return sec * 1e3 + nsec / 1e6;
}
