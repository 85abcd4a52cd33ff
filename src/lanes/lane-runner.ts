/**
 * What a lane's runner is called: the name of its folder (`lanes/NAME` in the
 * run's folder), its branch (`phaseloop/RUN_ID/NAME`) and its worktree
 * (`.phaseloop/lanes/RUN_ID/NAME`), from its task's id.
 */
import { createHash } from "node:crypto";

/**
 * A file- and branch-safe name for a task id, distinct for distinct ids: a
 * character a file or branch name cannot hold is written `+XX` (its UTF-8
 * bytes in hex), and `+` itself likewise, so `a b` is `a+20b` and never the
 * name of a task called `a-b-20rn`. A name longer than 60 characters keeps
 * its start and a SHA-256 of the whole id.
 */
export function laneName(task: string): string {
  let out = "";
  const chars = [...task];
  chars.forEach((c, i) => {
    const dotRisk = c === "." && (i === 0 || chars[i - 1] === "." || i === chars.length - 1 || task.endsWith(".lock") && i === chars.length - 5);
    if (/^[A-Za-z0-9_-]$/.test(c) || (c === "." && !dotRisk)) out += c;
    else for (const b of new TextEncoder().encode(c)) out += `+${b.toString(16).padStart(2, "0")}`;
  });
  if (out === "" ) return "+";
  if (out.startsWith("-")) out = `+2d${out.slice(1)}`;
  if (out.length <= 60) return out;
  return `${out.slice(0, 40)}+${createHash("sha256").update(task).digest("hex").slice(0, 16)}`;
}
