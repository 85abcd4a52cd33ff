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
