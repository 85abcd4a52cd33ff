/**
 * The slice of the CLI's io that `status` and `logs` use, typed loosely so
 * either writer style fits: a function or an object with `write`.
 */
export type Writer = ((text: string) => unknown) | { write(text: string): unknown };

export interface CommandIo {
  stdout: Writer;
  stderr: Writer;
  /** stdout is a terminal. */
  isTTY?: boolean;
  /** Colour wanted (terminal, no NO_COLOR, no --no-color). */
  color?: boolean;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

export function writerOf(writer: Writer): (text: string) => void {
  return typeof writer === "function" ? (text) => void writer(text) : (text) => void writer.write(text);
}

export interface ParsedArgs {
  positionals: string[];
  flags: Set<string>;
  values: Map<string, string>;
}

/**
 * Parses `[RUN_ID] --flag --name value --name=value`. Unknown options are
 * reported, not ignored: a typo must not silently change what is shown.
 */
export function parseCommandArgs(argv: readonly string[], booleans: readonly string[], valued: readonly string[]): { ok: true; args: ParsedArgs } | { ok: false; message: string } {
  const args: ParsedArgs = { positionals: [], flags: new Set(), values: new Map() };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      args.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      args.positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = eq === -1 ? arg : arg.slice(0, eq);
    if (booleans.includes(name) && eq === -1) {
      args.flags.add(name);
    } else if (valued.includes(name)) {
      const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
      if (value === undefined || value === "") return { ok: false, message: `option "${name}" needs a value` };
      args.values.set(name, value);
    } else {
      return { ok: false, message: `unknown option "${name}"` };
    }
  }
  return { ok: true, args };
}
