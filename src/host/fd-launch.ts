/**
 * A program started with a file open for reading on fd 3 (bubblewrap's `--seccomp 3` reads
 * the fence's filter there). As an argv it is a shell that opens the file and becomes the
 * program, `sh -c 'exec "$@" 3<"$0"' FILE PROGRAM ARGS…`, which anything that spawns an argv
 * can start. Where phaseloop spawns it itself (runProcess), it opens the file and hands it to
 * the program as fd 3 directly: the same process, without the shell's exec in between.
 */
import { isAbsolute } from "node:path";

/** The shell script that opens "$0" on fd 3 and becomes "$@". */
export const FD3_LAUNCH = 'exec "$@" 3<"$0"';

/** The argv that starts `argv` with `file` open for reading on fd 3. */
export function withFd3(sh: string, file: string, argv: readonly string[]): string[] {
  return [sh, "-c", FD3_LAUNCH, file, ...argv];
}

/**
 * The program, its arguments and the file for fd 3 of an argv made by withFd3 (given as the
 * program a spawn would start and its arguments), when the shell would open an absolute file
 * and start a program by its absolute path; undefined for any other argv.
 */
export function fd3Launch(program: string, args: readonly string[]): { program: string; args: string[]; file: string } | undefined {
  if (!/(?:^|\/)sh$/.test(program) || args[0] !== "-c" || args[1] !== FD3_LAUNCH || args.length < 4) return undefined;
  const file = args[2]!;
  const target = args[3]!;
  if (!isAbsolute(file) || !isAbsolute(target)) return undefined;
  return { program: target, args: args.slice(4), file };
}
