/**
 * Commands the built-in OpenAI-compatible agent asks to run. They run without
 * a shell, as argv, and only when they match a `bash` pattern of the phase's
 * tool set. Pure.
 */

/** Characters that would mean something to a shell: a command holding one outside quotes is refused. */
const SHELL_SYNTAX = /[;&|<>`$(){}\n\\*?[\]~#!]/;

export type SplitResult = { ok: true; argv: string[] } | { ok: false; reason: string };

/**
 * Split a command line into words the way a POSIX shell would for the simple
 * cases (whitespace, 'single' and "double" quotes), and refuse everything
 * else: pipes, redirections, substitutions, globs, escapes and variables.
 */
export function splitCommand(command: string): SplitResult {
  const argv: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (const ch of command) {
    if (quote) {
      if (ch === quote) quote = null;
      else if (quote === '"' && (ch === "$" || ch === "`" || ch === "\\")) return { ok: false, reason: `"${ch}" inside double quotes is not supported` };
      else word += ch;
      continue;
    }
    if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
      continue;
    }
    if (ch === " " || ch === "\t") {
      if (inWord) argv.push(word);
      word = "";
      inWord = false;
      continue;
    }
    if (SHELL_SYNTAX.test(ch)) return { ok: false, reason: `shell syntax ("${ch === "\n" ? "\\n" : ch}") is not supported: commands run without a shell` };
    word += ch;
    inWord = true;
  }
  if (quote) return { ok: false, reason: "unterminated quote" };
  if (inWord) argv.push(word);
  if (argv.length === 0) return { ok: false, reason: "empty command" };
  return { ok: true, argv };
}

/**
 * Whether a command (as words) matches an allowlist pattern such as
 * `npm test`, `git diff *` or `grep -rn *`: the pattern's words must match the
 * command's from the start; a final `*` matches any further words (or none),
 * and `*` inside a word matches any characters of that word.
 */
export function matchesPattern(argv: readonly string[], pattern: string): boolean {
  const words = pattern.trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return false;
  const last = words[words.length - 1];
  const open = last === "*";
  const fixed = open ? words.slice(0, -1) : words;
  if (open ? argv.length < fixed.length : argv.length !== fixed.length) return false;
  return fixed.every((w, i) => wordMatches(argv[i]!, w));
}

function wordMatches(word: string, pattern: string): boolean {
  if (!pattern.includes("*")) return word === pattern;
  const re = new RegExp(`^${pattern.split("*").map(escapeRegExp).join(".*")}$`, "s");
  return re.test(word);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The first pattern the command matches, if any. */
export function allowedBy(argv: readonly string[], patterns: readonly string[]): string | undefined {
  return patterns.find((p) => matchesPattern(argv, p));
}

/**
 * Flags that make an allowed command write a file (`git diff --output=…`,
 * `sort -o …`, `curl -o …`): a pattern such as `git diff *` would otherwise
 * let the model write anywhere. Writing a file is write_file's job, within
 * the write globs; a command may not.
 */
const OUTPUT_FLAGS = new Set(["--output", "--output-file", "--output-document", "--output-directory", "--log-file", "--out", "--outfile", "--out-file", "--dump-dir"]);

/** Why an allowed command is refused all the same: an output flag, or a path argument that leaves the workspace. */
export function outputFlagOrEscape(argv: readonly string[]): string | undefined {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("-") ? (eq > 0 ? arg.slice(0, eq) : arg) : undefined;
    if (flag && OUTPUT_FLAGS.has(flag)) return `"${flag}" makes the command write a file: write files with write_file`;
    // a short option's glued value (-o../x) is a path like any other
    const values = [arg, ...(eq > 0 ? [arg.slice(eq + 1)] : []), ...(/^-[A-Za-z]./.test(arg) ? [arg.slice(2)] : [])];
    for (const v of values) {
      if (v.startsWith("/") || v.startsWith("~")) return `"${arg}": absolute paths are not allowed in commands; use paths relative to the workspace`;
      if (/(^|[\\/])\.\.([\\/]|$)/.test(v)) return `"${arg}": ".." is not allowed in commands`;
      if (/(^|[\\/])\.(git|phaseloop)([\\/]|$)/i.test(v)) return `"${arg}" names ${/\.git/i.test(v) ? ".git" : ".phaseloop"}, which is not open to the agent`;
    }
  }
  return undefined;
}
