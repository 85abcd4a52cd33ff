/**
 * Paths a pipeline names for the workdir: a phase's output files and its tool sets' write
 * globs are relative to the workdir and stay inside it, within the bounds the runtime
 * holds every path to (see host/open-inside.ts). An absolute path or one that climbs out
 * with `..` would pass validation and fail when the phase runs; it is an error here, at the
 * path. Only the text before a template's first `{{` is judged: the rest is known at run time.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { diag, esc, phaseEntries, type RuleContext } from "./rule-context.ts";

const PATH_MAX_BYTES = 4096;
const PATH_MAX_DEPTH = 64;

/** Why a workdir-relative path is refused, or undefined. */
export function workdirPathProblem(path: string): string | undefined {
  const known = path.includes("{{") ? path.slice(0, path.indexOf("{{")) : path;
  if (/^([\\/]|~|[A-Za-z]:[\\/])/.test(known)) return "is absolute";
  if (utf8Length(path) > PATH_MAX_BYTES) return `is longer than ${PATH_MAX_BYTES} bytes`;
  const parts = known.split(/[\\/]+/);
  if (known === path || /[\\/]$/.test(known)) {
    // every component is known (or the last one is a template's): count them
  } else {
    parts.pop(); // a component a template completes
  }
  let depth = 0;
  for (const c of parts) {
    if (c === "" || c === ".") continue;
    if (c === "..") {
      if (--depth < 0) return "climbs out of the workdir with \"..\"";
      continue;
    }
    if (++depth > PATH_MAX_DEPTH) return `is more than ${PATH_MAX_DEPTH} directories deep`;
  }
  return undefined;
}

function utf8Length(s: string): number {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
}

export function checkPaths(ctx: RuleContext): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [name, phase] of phaseEntries(ctx.doc)) {
    for (const [key, spec] of Object.entries(phase.output ?? {})) {
      const file = (spec as { file?: unknown } | null)?.file;
      if (typeof file !== "string") continue;
      const problem = workdirPathProblem(file);
      if (problem) {
        out.push(diag(ctx, "PATH_OUTSIDE_WORKDIR", `/phases/${esc(name)}/output/${esc(key)}/file`, `output "${key}" of phase "${name}" is read from "${file}", which ${problem}`, { hint: "an output file is a path relative to the workdir, inside it (the phase's agent writes it there)" }));
      }
    }
  }
  for (const [name, set] of Object.entries(ctx.doc.tools ?? {})) {
    const write = (set as { write?: unknown } | null)?.write;
    if (!Array.isArray(write)) continue;
    write.forEach((glob, i) => {
      if (typeof glob !== "string") return;
      const problem = workdirPathProblem(glob);
      if (problem) out.push(diag(ctx, "PATH_OUTSIDE_WORKDIR", `/tools/${esc(name)}/write/${i}`, `write glob "${glob}" of tool set "${name}" ${problem}`, { hint: "write globs are relative to the workdir: src/**, not /abs/path/src/**; nothing outside the workdir is writable" }));
    });
  }
  return out;
}
