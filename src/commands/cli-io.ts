import type { Host } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import type { CommandIo } from "../reporters/command-io.ts";

/** What a command gets from the CLI shell: writers, the terminal facts, env and cwd. */
export interface CliIo extends CommandIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  isTTY: boolean;
  /** The terminal's width, when stdout is one and says. */
  columns?: number;
  color: boolean;
  env: Record<string, string | undefined>;
  cwd: string;
  /** Files, processes and the clock: the machine phaseloop runs on, unless given (a host in memory, in tests). */
  host?: Host;
}

/** The host a command works on. */
export function hostOf(io: { host?: Host }): Host {
  return io.host ?? nodeHost;
}

/** A command: parses its own argv, returns the exit code. */
export type CommandMain = (argv: string[], io: CliIo) => Promise<number>;

export { parseCommandArgs, type ParsedArgs } from "../reporters/command-io.ts";
