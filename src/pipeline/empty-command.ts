/**
 * A command that would run nothing: a blank `sh -c` string, an argv without a
 * program, or a shell given a blank script (`[sh, -c, ""]`). Such a command
 * "succeeds" without checking anything, so it is refused: at validation when
 * the text is blank as written, and when a phase's rendered command is.
 */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"]);

/** Why the command runs nothing, or undefined when it runs something. */
export function emptyCommand(run: string | readonly string[]): { index?: number; message: string } | undefined {
  if (typeof run === "string") return run.trim() === "" ? { message: "the command is empty" } : undefined;
  if (run.length === 0 || run[0]!.trim() === "") return { index: 0, message: "the command names no program" };
  const program = run[0]!.trim().split("/").at(-1)!;
  if (!SHELLS.has(program)) return undefined;
  const flag = run.findIndex((a, i) => i > 0 && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(a));
  if (flag < 0) return undefined;
  const script = run[flag + 1];
  if (script === undefined || script.trim() === "") return { index: Math.min(flag + 1, run.length - 1), message: `the script given to ${program} ${run[flag]} is empty` };
  return undefined;
}
