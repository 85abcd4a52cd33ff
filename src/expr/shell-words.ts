/**
 * What a word of a simple command is to the program that reads it: plain
 * data, or something that decides what runs. `words` are the command's words
 * before the one in question, as the shell will hand them on (quotes
 * removed); a word holding an expansion is `undefined` (unknown).
 *
 * - `command`: the program itself (`{{ x }} arg`, `exec {{ x }}`, `env A=1 {{ x }}`);
 * - `code`: a program for an interpreter (`sh -c {{ x }}`, `eval`, `python3 -c`,
 *   `awk`'s and `sed`'s script, a script path, `trap`, `source`);
 * - `name`: a variable name (`read`, `unset`, `printf -v`, `test -v`, `declare`): bash
 *   evaluates a subscript there (`a[$(cmd)]`);
 * - `arith`: arithmetic (`let`, `declare -i`), where bash evaluates a subscript too;
 * - `data`: anything else.
 */
export type WordRole = "command" | "code" | "name" | "arith" | "data";

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "busybox", "rbash", "tcsh", "csh"]);
const INTERPRETERS = new Set(["python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node", "nodejs", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "osascript", "deno", "bun", "pwsh", "powershell", "jshell", "irb", "guile", "racket", "sbcl", "clisp", "ghci", "julia", "expect", "gdb", "m4", "bc", "dc", "jq", "gojq", "yq"]);
/** The flag whose next word is a program, per interpreter family. */
const CODE_FLAGS = new Set(["-c", "-e", "-E", "-r", "-p", "-m", "--eval", "--print", "--command", "-Command", "eval", "run", "-exec", "--exec", "-f", "--file", "--init-file", "--rcfile", "--require", "--import", "--loader", "-M"]);
/** Options that take a value that is not a program: `awk -F :`, `bash -o pipefail`. */
const VALUE_FLAGS = new Set(["-F", "-v", "-o", "+o", "-O", "+O", "-W", "-I", "-L", "-X", "--arg", "--argjson", "--slurpfile", "--rawfile"]);
const SCRIPTED = new Set(["awk", "gawk", "mawk", "nawk", "busybox-awk", "sed", "gsed", "ssed", "perl", "vim", "vi", "ex", "ed", "nvim"]);
/** Run their arguments as a command line (`nohup cmd …`): the next non-option word is a program again. */
const WRAPPERS = new Set(["env", "exec", "command", "builtin", "nohup", "nice", "time", "xargs", "sudo", "doas", "su", "timeout", "stdbuf", "setsid", "chroot", "flock", "watch", "strace", "ltrace", "nsenter", "unshare", "taskset", "ionice", "chrt", "runuser", "script", "unbuffer", "parallel", "ssh", "npx", "pnpx", "bunx", "then", "do", "else", "elif", "if", "while", "until", "!", "{", "coproc", "caffeinate", "firejail", "bwrap", "systemd-run", "tmux", "screen", "entr", "inotifywait", "fakeroot", "proot", "gtimeout", "sg", "newgrp", "catchsegv", "valgrind", "gdbserver", "pkexec", "eatmydata", "torsocks", "proxychains", "proxychains4", "dbus-launch", "xvfb-run"]);
/** Whose words are run as a command line or a script whatever their position. */
const EVALUATORS = new Set(["eval", "trap", "source", ".", "alias", "fc", "bind", "complete", "compgen", "enable", "hash", "let"]);
const NAME_BUILTINS = new Set(["read", "unset", "mapfile", "readarray", "getopts", "wait", "export", "readonly", "declare", "typeset", "local", "shift", "printf", "test", "[", "[[", "for", "select", "function", "unalias", "caller", "type", "which"]);

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;
const basename = (w: string) => w.slice(w.lastIndexOf("/") + 1);

/**
 * The role of the word that follows `words` in one simple command, whose
 * text so far (before the template) is `prefix`.
 */
export function wordRole(words: (string | undefined)[], prefix: string | undefined, integerVariables: boolean): WordRole {
  let i = 0;
  // leading assignments: `A=1 B=2 cmd`
  while (i < words.length && words[i] !== undefined && ASSIGNMENT.test(words[i]!)) i++;
  return roleAfter(words.slice(i), prefix, integerVariables, true);
}

function roleAfter(words: (string | undefined)[], prefix: string | undefined, intVars: boolean, atStart: boolean): WordRole {
  if (words.length === 0) {
    if (prefix !== undefined && ASSIGNMENT.test(prefix)) return intVars || /^[A-Za-z_][A-Za-z0-9_]*\[/.test(prefix) ? "arith" : "data";
    if (prefix !== undefined && /^[A-Za-z_][A-Za-z0-9_]*\[[^\]]*$/.test(prefix)) return "arith";
    return atStart ? "command" : "data";
  }
  const head = words[0];
  if (head === undefined) return "data"; // a program named by an expansion: its words are its own
  const name = basename(head);
  const rest = words.slice(1);
  if (WRAPPERS.has(name)) {
    // skip the wrapper's own options and assignments (and `timeout 5`'s duration), then a program again
    let j = 0;
    while (j < rest.length && rest[j] !== undefined && (rest[j]!.startsWith("-") || ASSIGNMENT.test(rest[j]!) || /^[0-9.]+[smhd]?$/.test(rest[j]!))) j++;
    // `sudo -u user`, `su -c`, `ssh host cmd`: the wrapper's words are code as well as commands
    if (name === "su" || name === "ssh" || name === "runuser") return "code";
    if (j < rest.length) return roleAfter(rest.slice(j), prefix, intVars, true);
    // `env -S "cmd args"` splits its value into a command line
    if (name === "env" && (rest[rest.length - 1] === "-S" || rest[rest.length - 1] === "--split-string" || prefix?.startsWith("-S") === true)) return "code";
    if (prefix !== undefined && (prefix.startsWith("-") || ASSIGNMENT.test(prefix))) return "data";
    return "command";
  }
  if (EVALUATORS.has(name)) return name === "let" ? "arith" : "code";
  if (name === "find") {
    const k = rest.findIndex((w) => w === "-exec" || w === "-execdir" || w === "-ok" || w === "-okdir");
    if (k >= 0) return roleAfter(rest.slice(k + 1), prefix, intVars, true);
    return "data";
  }
  if (SHELLS.has(name) || INTERPRETERS.has(name) || SCRIPTED.has(name)) return interpreterRole(name, rest, prefix);
  if (NAME_BUILTINS.has(name)) return nameRole(name, rest, prefix, intVars);
  return "data";
}

/** `sh -c SCRIPT`, `python3 -c CODE`, `awk PROGRAM FILE`, `bash SCRIPT ARG`: the program word is code; later words are data. */
function interpreterRole(name: string, rest: (string | undefined)[], prefix: string | undefined): WordRole {
  const shell = SHELLS.has(name);
  const scripted = SCRIPTED.has(name);
  let programGiven = false;
  for (let j = 0; j < rest.length; j++) {
    const w = rest[j];
    if (w === undefined) {
      if (!programGiven) programGiven = true;
      continue;
    }
    if (w === "--") continue;
    if (VALUE_FLAGS.has(w)) {
      const n = w === "--arg" || w === "--argjson" || w === "--slurpfile" || w === "--rawfile" ? 2 : 1;
      if (j + n >= rest.length) return "data"; // the template is that value
      j += n;
      continue;
    }
    if ((w.startsWith("-") || w.startsWith("+")) && w.length > 1) {
      // `-c`, `-lc`, `-ec` (shells); `-e`, `-c`, `--eval` and kin (interpreters)
      const takesProgram = shell ? /^-[a-zA-Z]*c[a-zA-Z]*$/.test(w) : CODE_FLAGS.has(w) || /^-[a-zA-Z]*[ce]$/.test(w);
      if (takesProgram) {
        if (j === rest.length - 1) return "code";
        programGiven = true;
        j++;
      }
      continue;
    }
    if (!programGiven) {
      programGiven = true;
      continue;
    }
    // arguments after the program: data (awk's `v=1` assignments are data too)
    if (scripted || shell || INTERPRETERS.has(name)) return "data";
  }
  if (prefix !== undefined && prefix.startsWith("-") && prefix.length > 1) return "code"; // an option of an interpreter
  return programGiven ? "data" : "code";
}

/** `read {{ x }}`, `printf -v {{ x }}`, `test -v {{ x }}`, `declare {{ x }}=v`: a variable name. */
function nameRole(name: string, rest: (string | undefined)[], prefix: string | undefined, intVars: boolean): WordRole {
  const last = rest[rest.length - 1];
  if (name === "printf" || name === "test" || name === "[" || name === "[[") return last === "-v" ? "name" : "data";
  if (name === "for" || name === "select") return rest.length === 0 ? "name" : "data";
  if (name === "function" || name === "type" || name === "which" || name === "caller" || name === "shift" || name === "wait" || name === "unalias") return rest.length === 0 ? "name" : "data";
  if (name === "export" || name === "readonly" || name === "declare" || name === "typeset" || name === "local") {
    const integer = intVars || rest.some((w) => w !== undefined && /^-[a-zA-Z]*i/.test(w));
    if (prefix !== undefined && ASSIGNMENT.test(prefix)) return integer || /^[A-Za-z_][A-Za-z0-9_]*\[/.test(prefix) ? "arith" : "data";
    return "name";
  }
  // read, unset, mapfile, readarray, getopts: every operand names a variable
  return "name";
}

/** Whether a command reads its program from standard input: `… | sh`, `python3 <<< …`, `xargs sh -c`. */
export function readsProgramFromStdin(words: (string | undefined)[]): boolean {
  let i = 0;
  while (i < words.length && words[i] !== undefined && ASSIGNMENT.test(words[i]!)) i++;
  let rest = words.slice(i);
  for (;;) {
    const head = rest[0];
    if (head === undefined) return false;
    const name = basename(head);
    if (WRAPPERS.has(name)) {
      let j = 1;
      while (j < rest.length && rest[j] !== undefined && (rest[j]!.startsWith("-") || ASSIGNMENT.test(rest[j]!) || /^[0-9.]+[smhd]?$/.test(rest[j]!))) j++;
      // `xargs CMD` hands standard input to CMD as words: a program if CMD's program is missing
      if (name === "xargs" && j < rest.length) return interpreterRole(basename(rest[j] ?? ""), rest.slice(j + 1), undefined) === "code" && isInterpreter(rest[j]);
      rest = rest.slice(j);
      continue;
    }
    if (name === "source" || name === "." || name === "eval") return true;
    if (!isInterpreter(head)) return false;
    // an interpreter with no program word, or with `-` / `-s` / `/dev/stdin` as its program
    return interpreterRole(name, rest.slice(1), undefined) === "code" || rest.slice(1).some((w) => w === "-" || w === "-s" || w === "/dev/stdin");
  }
}

function isInterpreter(word: string | undefined): boolean {
  if (word === undefined) return false;
  const name = basename(word);
  return SHELLS.has(name) || INTERPRETERS.has(name) || SCRIPTED.has(name);
}

/** Words a command line begins with that start a new command (`then`, `do`, …), not a program. */
export const RESERVED = new Set(["if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}", "time"]);

/** Whether the word after `words` is the program of a POSIX shell (`sh -c WORD`, `env X=1 bash -lc WORD`). */
export function isShellScriptWord(words: (string | undefined)[]): boolean {
  let rest = words.filter((w, i) => !(i === 0 && w !== undefined && ASSIGNMENT.test(w)));
  for (;;) {
    const head = rest[0];
    if (head === undefined || !WRAPPERS.has(basename(head))) break;
    let j = 1;
    while (j < rest.length && rest[j] !== undefined && (rest[j]!.startsWith("-") || ASSIGNMENT.test(rest[j]!) || /^[0-9.]+[smhd]?$/.test(rest[j]!))) j++;
    rest = rest.slice(j);
  }
  const head = rest[0];
  const last = rest[rest.length - 1];
  return head !== undefined && ["sh", "bash", "dash", "ash", "ksh", "mksh", "zsh", "yash", "posh"].includes(basename(head)) && rest.length > 1 && last !== undefined && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(last);
}
