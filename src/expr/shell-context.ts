/**
 * Templates in shell commands. A value is data, never code: each `{{ }}` of
 * a `run:` or hook string is rendered as a reference to an environment
 * variable the process is given (`"${PHASELOOP_T1_answer}"` bare,
 * `${PHASELOOP_T1_answer}` inside double quotes, `'"${PHASELOOP_T1_answer}"'`
 * inside single quotes, which it closes and opens again), which every POSIX
 * shell expands to exactly the value and never reads again. Where a parameter
 * expansion is not plain data (after a `$`, inside backticks,
 * `${…}`, arithmetic, `[[ … -eq … ]]`, a comment or a here-document), or
 * where the word it stands in is a program (`{{ x }} arg`, `sh -c …`,
 * `eval`, `… | sh`), a variable name or arithmetic, the template is refused
 * before anything runs. The user's own words (`params.*`, `pipeline.dir`,
 * `env.*`) may stand where a program goes: there they are the program.
 */
import type { Expr } from "./ast.ts";
import type { ExprDiagnostic } from "./diagnostic.ts";
import { RESERVED, readsProgramFromStdin, wordRole, type WordRole } from "./shell-words.ts";
import type { Template } from "./template.ts";

/** How a value is written: a quoted variable reference (bare), one inside double quotes, one spliced into single quotes (`'…'"${V}"'…'`), or the user's own text as it is. */
export type ShellContext = "bare" | "double" | "single" | "verbatim";

interface Bare {
  kind: "bare";
  parens: number;
  /** The current simple command's words so far (undefined: holds an expansion). */
  words: (string | undefined)[];
  word: string | null;
  dynamic: boolean;
  redirect: null | "file" | "herestring";
  /** Templates of the current command, of the pipeline's earlier commands, and of here-strings. */
  cur: number[];
  pipe: number[];
  herestring: number[];
  cases: ("head" | "pattern" | "body")[];
  test: { exprs: number[]; arith: boolean } | null;
}

type Frame =
  | Bare
  | { kind: "double" }
  | { kind: "single" }
  | { kind: "backtick" }
  | { kind: "param"; braces: number }
  | { kind: "arith"; parens: number; bracket?: boolean }
  | { kind: "ansi" }
  | { kind: "comment" }
  | { kind: "heredoc"; delimiters: string[]; line: string; strip: boolean };

const UNSAFE: Record<string, string> = {
  single: "inside single quotes that are a program for another interpreter",
  backtick: "inside backticks",
  param: 'inside "${…}"',
  arith: "inside arithmetic, which bash evaluates (a[$(cmd)] runs cmd)",
  ansi: "inside $'…'",
  comment: "inside a shell comment",
  heredoc: "inside a here-document",
};

const ROLE: Record<Exclude<WordRole, "data">, string> = {
  command: "stands where the program goes: the value would choose what runs",
  code: "is a program for an interpreter (sh -c, eval, python -c, awk, sed, a script path): the value would be run as code",
  name: "is a variable name, where bash evaluates a subscript (a[$(cmd)] runs cmd)",
  arith: "is arithmetic, which bash evaluates (a[$(cmd)] runs cmd)",
};

const HINT = 'pass the value as data: a plain argument or inside "…" (echo "note: {{ x }}"); a script reads it as an argument: sh -c \'echo "$1"\' sh "{{ x }}"';

export type ShellContexts = { ok: true; contexts: ShellContext[]; /** Each part's role where it is not plain data (the user's own words in a program's place). */ roles?: WordRole[] } | { ok: false; diagnostics: ExprDiagnostic[] };

/** Whether an expression is the user's own word (a param, the pipeline's folder, an environment variable), which may be a program. */
export function isUserWord(e: Expr): boolean {
  const path: string[] = [];
  let cur: Expr = e;
  while (cur.kind === "member") {
    path.unshift(cur.property);
    cur = cur.object;
  }
  if (cur.kind !== "ident") return false;
  if (cur.name === "params" || cur.name === "env") return path.length === 1;
  if (cur.name === "pipeline") return path.length === 1 && (path[0] === "dir" || path[0] === "name");
  if (cur.name === "run") return path.length === 1 && (path[0] === "artifacts" || path[0] === "id");
  return false;
}

const newBare = (): Bare => ({ kind: "bare", parens: 0, words: [], word: null, dynamic: false, redirect: null, cur: [], pipe: [], herestring: [], cases: [], test: null });

/**
 * The shell context of every expression part of `template`, in order, or
 * why a part cannot stand where it does.
 */
export function shellContexts(template: Template): ShellContexts {
  const stack: Frame[] = [newBare()];
  const contexts: ShellContext[] = [];
  const roles: WordRole[] = [];
  const diagnostics: ExprDiagnostic[] = [];
  const exprs = template.parts.filter((p) => p.kind === "expr");
  const refuse = (k: number, why: string) => {
    const p = exprs[k]!;
    if (!diagnostics.some((d) => d.start === p.start)) diagnostics.push({ code: "SHELL_TEMPLATE_CONTEXT", message: `a template ${why}`, start: p.start, end: p.end, hint: HINT });
  };
  const allText = template.parts.map((p) => (p.kind === "text" ? p.text : "x")).join("");
  const intVars = /\b(declare|typeset|local|export|readonly)\s+(-[A-Za-z]*\s+)*-[A-Za-z]*i/.test(allText);
  let pendingHeredocs: { word: string; strip: boolean }[] = [];
  let afterDollar = false;
  const top = () => stack[stack.length - 1]!;
  const bareBelow = (): Bare | undefined => {
    for (let j = stack.length - 1; j >= 0; j--) if (stack[j]!.kind === "bare") return stack[j] as Bare;
    return undefined;
  };

  const endWord = (b: Bare) => {
    if (b.word === null) return;
    const w = b.dynamic ? undefined : b.word;
    b.word = null;
    b.dynamic = false;
    if (b.redirect) {
      b.redirect = null;
      return;
    }
    const kase = b.cases[b.cases.length - 1];
    if (kase === "head") {
      if (w === "in") b.cases[b.cases.length - 1] = "pattern";
      return;
    }
    if (kase === "pattern") {
      if (w === "esac") b.cases.pop();
      return;
    }
    if (b.words.length === 0 && w === "esac" && kase === "body") {
      b.cases.pop();
      return;
    }
    if (b.words.length === 0 && w === "case") {
      b.cases.push("head");
      return;
    }
    if (b.words.length === 0 && w !== undefined && RESERVED.has(w)) return;
    if (b.test) {
      if (w === "]]") {
        if (b.test.arith) for (const k of b.test.exprs) refuse(k, "is compared as a number in [[ … ]], which bash evaluates as arithmetic (a[$(cmd)] runs cmd)");
        b.test = null;
      } else if (w !== undefined && /^-(eq|ne|lt|le|gt|ge)$/.test(w)) b.test.arith = true;
    } else if (b.words.length === 0 && w === "[[") b.test = { exprs: [], arith: false };
    b.words.push(w);
  };
  const endCommand = (b: Bare, piped: boolean) => {
    endWord(b);
    if (readsProgramFromStdin(b.words)) {
      for (const k of [...b.pipe, ...b.herestring]) refuse(k, "flows into the standard input of a program that reads its program there (… | sh, sh <<< …): the value would be run as code");
    }
    b.pipe = piped ? [...b.pipe, ...b.cur] : [];
    b.cur = [];
    b.herestring = [];
    b.words = [];
    b.redirect = null;
  };
  const appendToWord = (c: string) => {
    const below = stack[stack.length - 2];
    if (below?.kind === "bare") below.word = (below.word ?? "") + c;
  };

  for (const part of template.parts) {
    if (part.kind === "expr") {
      const k = contexts.length;
      const f = top();
      const b = bareBelow()!;
      contexts.push("bare");
      if (afterDollar) refuse(k, 'stands right after "$": phaseloop\'s templates are written {{ x }}, without "$" (the "$" would make the value a command or a variable)');
      // single quotes straight in a command's word (`git commit -m 'note: {{ x }}'`) are closed around
      // the reference; inside anything else (backticks, `${…}`, a here-document) they are not quotes
      else if (f.kind !== "bare" && f.kind !== "double" && !(f.kind === "single" && stack[stack.length - 2]?.kind === "bare")) refuse(k, UNSAFE[f.kind] ?? "cannot be quoted here");
      else {
        if (f.kind === "double" || f.kind === "single") contexts[k] = f.kind;
        const inCase = b.cases.length > 0 && b.cases[b.cases.length - 1] !== "body";
        let role: WordRole = "data";
        if (b.redirect === "herestring") b.herestring.push(k);
        else if (!b.redirect && !inCase) role = wordRole(b.words, b.dynamic ? undefined : (b.word ?? ""), intVars);
        if (b.test) b.test.exprs.push(k);
        b.cur.push(k);
        roles[k] = role;
        if (role !== "data") {
          const user = isUserWord(exprs[k]!.expr);
          // a single-quoted program for an interpreter (awk '{print "{{ x }}"}', python3 -c '…') would take the value as code
          // even the user's own words: quotes closed around a value inside a program's text splice it into that program
          if (f.kind === "single" || !user || role === "name" || role === "arith") refuse(k, f.kind === "single" ? `inside single quotes ${ROLE[role]}` : ROLE[role]);
          // a script that is one param (`[sh, -c, "{{ params.check }}"]`) is the user's command line as written
          else if (role === "command" && template.parts.length === 1) contexts[k] = "verbatim";
        }
      }
      if (f.kind === "heredoc") f.line += "\0"; // a value never ends a here-document
      if (f.kind === "bare" || f.kind === "double" || f.kind === "single") {
        if (b.word === null) b.word = "";
        b.dynamic = true;
      }
      afterDollar = false;
      continue;
    }
    const s = part.text;
    afterDollar = false;
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      const next = s[i + 1];
      const f = top();
      switch (f.kind) {
        case "single":
          if (c === "'") stack.pop();
          else appendToWord(c);
          break;
        case "ansi":
          if (c === "\\") i++;
          else if (c === "'") stack.pop();
          break;
        case "comment":
          if (c === "\n") {
            stack.pop();
            i--; // the newline ends the command too: let the frame below see it
          }
          break;
        case "heredoc":
          if (c === "\n") {
            const line = f.strip ? f.line.replace(/^\t+/, "") : f.line;
            if (line === f.delimiters[0]) f.delimiters.shift();
            f.line = "";
            if (f.delimiters.length === 0) stack.pop();
          } else f.line += c;
          break;
        case "backtick":
          if (c === "\\") i++;
          else if (c === "`") stack.pop();
          break;
        case "double":
          if (c === "\\") {
            appendToWord(next ?? "");
            i++;
          } else if (c === '"') stack.pop();
          else if (c === "`") {
            markDynamic(stack);
            stack.push({ kind: "backtick" });
          } else if (c === "$") {
            markDynamic(stack);
            i = dollar(s, i, stack);
            if (i === s.length - 1 && s[i] === "$") afterDollar = true;
          } else appendToWord(c);
          break;
        case "param":
          if (c === "\\") i++;
          else if (c === "{") f.braces++;
          else if (c === "}" && --f.braces === 0) stack.pop();
          break;
        case "arith":
          if (c === "(") f.parens++;
          else if (c === ")" && --f.parens === 0) {
            stack.pop();
            if (s[i + 1] === ")") i++;
          } else if (c === "]" && f.bracket && f.parens === 1) stack.pop(); // `$[ … ]`, bash's old arithmetic
          break;
        case "bare":
          i = bareChar(f, s, i);
          break;
      }
    }
  }
  // the end of the text ends every command still open
  for (let j = stack.length - 1; j >= 0; j--) {
    const f = stack[j]!;
    if (f.kind === "bare") endCommand(f, false);
  }
  return diagnostics.length ? { ok: false, diagnostics: diagnostics.sort((a, b) => a.start - b.start) } : { ok: true, contexts, roles: contexts.map((_, k) => roles[k] ?? "data") };

  /** One character at a bare level; returns the index of the last character consumed. */
  function bareChar(f: Bare, s: string, i: number): number {
    const c = s[i]!;
    const next = s[i + 1];
    const kase = f.cases[f.cases.length - 1];
    const atCommand = f.words.length === 0 && f.word === null && !f.redirect && (kase === undefined || kase === "body");
    if (c === "\\") {
      if (next === "\n") return i + 1; // a line continuation
      f.word = (f.word ?? "") + (next ?? "");
      return i + 1;
    }
    if (c === "'") {
      f.word ??= "";
      stack.push({ kind: "single" });
    } else if (c === '"') {
      f.word ??= "";
      stack.push({ kind: "double" });
    } else if (c === "`") {
      f.word ??= "";
      f.dynamic = true;
      stack.push({ kind: "backtick" });
    } else if (c === "$") {
      f.word ??= "";
      f.dynamic = true;
      const j = dollar(s, i, stack);
      if (j === s.length - 1 && s[j] === "$") afterDollar = true;
      return j;
    } else if (c === "#" && f.word === null) stack.push({ kind: "comment" });
    else if (c === " " || c === "\t") endWord(f);
    else if (c === "\n") {
      endCommand(f, false);
      if (pendingHeredocs.length > 0) {
        stack.push({ kind: "heredoc", delimiters: pendingHeredocs.map((p) => p.word), line: "", strip: pendingHeredocs.some((p) => p.strip) });
        pendingHeredocs = [];
      }
    } else if (c === ";") {
      endCommand(f, false);
      if (next === ";" || next === "&") {
        if (f.cases.length > 0) f.cases[f.cases.length - 1] = "pattern";
        return s[i + 2] === "&" ? i + 2 : i + 1;
      }
    } else if (c === "&") {
      endCommand(f, false);
      if (next === "&" || next === ">") return i + 1;
    } else if (c === "|") {
      if (kase === "pattern") endWord(f);
      else if (next === "|") {
        endCommand(f, false);
        return i + 1;
      } else endCommand(f, true);
      if (next === "&") return i + 1;
    } else if (c === "(") {
      if (kase === "pattern") return i; // `(pattern)`: the optional opening parenthesis
      if (atCommand && next === "(") {
        stack.push({ kind: "arith", parens: 1 });
        return i + 1;
      }
      endCommand(f, false);
      f.parens++;
    } else if (c === ")") {
      endWord(f);
      if (f.cases[f.cases.length - 1] === "pattern") {
        f.cases[f.cases.length - 1] = "body";
        f.words = [];
        return i;
      }
      endCommand(f, false);
      if (f.parens > 0) f.parens--;
      else if (stack.length > 1) stack.pop();
    } else if (c === "<" || c === ">") {
      // `2>file`: the digits name a descriptor, not a word of the command
      if (f.word !== null && !f.dynamic && /^[0-9]+$/.test(f.word)) f.word = null;
      else endWord(f);
      if (c === "<" && next === "<" && s[i + 2] === "<") {
        f.redirect = "herestring";
        return i + 2;
      }
      if (c === "<" && next === "<") {
        const h = heredocWord(s, i + 2);
        if (h) {
          pendingHeredocs.push({ word: h.word, strip: h.strip });
          return h.end - 1;
        }
        return i + 1;
      }
      if (next === "(") {
        // a process substitution: a command list of its own
        stack.push(newBare());
        return i + 1;
      }
      f.redirect = "file";
      if (next === ">" || next === "&" || next === "|" || (c === "<" && next === ">")) return i + 1;
    } else {
      f.word = (f.word ?? "") + c;
    }
    return i;
  }
}

function markDynamic(stack: Frame[]): void {
  const below = stack[stack.length - 2];
  if (below?.kind === "bare") {
    below.word ??= "";
    below.dynamic = true;
  }
}

/** After a `$` at `i`: push what it opens; returns the index of the last character consumed. */
function dollar(s: string, i: number, stack: Frame[]): number {
  const n = s[i + 1];
  if (n === "(" && s[i + 2] === "(") {
    stack.push({ kind: "arith", parens: 1 });
    return i + 2;
  }
  if (n === "(") {
    stack.push(newBare());
    return i + 1;
  }
  if (n === "[") {
    stack.push({ kind: "arith", parens: 1, bracket: true });
    return i + 1;
  }
  if (n === "{") {
    stack.push({ kind: "param", braces: 1 });
    return i + 1;
  }
  if (n === "'" && stack[stack.length - 1]!.kind === "bare") {
    stack.push({ kind: "ansi" });
    return i + 1;
  }
  if (n === '"' && stack[stack.length - 1]!.kind === "bare") {
    stack.push({ kind: "double" });
    return i + 1;
  }
  return i;
}

/** The delimiter word after `<<` (or `<<-`), unquoted. */
function heredocWord(s: string, from: number): { word: string; strip: boolean; end: number } | undefined {
  let i = from;
  const strip = s[i] === "-";
  if (strip) i++;
  while (s[i] === " " || s[i] === "\t") i++;
  let word = "";
  while (i < s.length && !/[\s;&|()<>]/.test(s[i]!)) {
    const c = s[i]!;
    if (c === "'" || c === '"') {
      const close = s.indexOf(c, i + 1);
      if (close < 0) break;
      word += s.slice(i + 1, close);
      i = close + 1;
    } else if (c === "\\") {
      word += s[i + 1] ?? "";
      i += 2;
    } else {
      word += c;
      i++;
    }
  }
  return word ? { word, strip, end: i } : undefined;
}
