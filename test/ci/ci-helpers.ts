import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { ROOT, tempDir } from "../cli/cli-helpers.ts";

export type Yaml = Record<string, unknown>;

export function readYaml(path: string): Yaml {
  return parse(readFileSync(join(ROOT, path), "utf8")) as Yaml;
}

/**
 * The `phaseloop …` command lines of a shell script, as argv: words split as
 * sh would (quotes, `$VAR` and `${VAR}` from `vars`), up to the end of the
 * command (`)`, `;`, `|`, `&&`, `>`, a line end).
 */
export function phaseloopCommands(script: string, vars: Record<string, string>): string[][] {
  const out: string[][] = [];
  // in command position: a line's start, or after `$(`, `;`, `|`, `&` or `{`
  for (const m of script.matchAll(/(?:^[ \t]*|\$\(|[;|&{][ \t]*)phaseloop([ \t][^\n]*)/gm)) out.push(shellWords(m[1]!, vars));
  return out;
}

export function shellWords(text: string, vars: Record<string, string>): string[] {
  const words: string[] = [];
  let word: string | null = null;
  const expand = (s: string, i: number): [string, number] => {
    const m = /^\$(?:\{(\w+)\}|(\w+))/.exec(s.slice(i));
    if (!m) return ["$", i + 1];
    const name = m[1] ?? m[2]!;
    if (!(name in vars)) throw new Error(`unknown variable $${name} in: ${text}`);
    return [vars[name]!, i + m[0].length];
  };
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
      i++;
    } else if (c === ")" || c === ";" || c === "|" || c === ">" || c === "&") {
      break;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      word = (word ?? "") + text.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      let s = "";
      while (text[j] !== '"') {
        if (text[j] === "$") {
          const [v, next] = expand(text, j);
          s += v;
          j = next;
        } else s += text[j++];
      }
      word = (word ?? "") + s;
      i = j + 1;
    } else if (c === "$") {
      const [v, next] = expand(text, i);
      word = (word ?? "") + v;
      i = next;
    } else {
      word = (word ?? "") + c;
      i++;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** `${{ expr }}` in a workflow value, with the expressions a test knows replaced. */
export function substitute(value: string, known: Record<string, string>): string {
  return value.replace(/\$\{\{\s*([^}]+?)\s*\}\}/g, (all, expr: string) => {
    if (!(expr in known)) throw new Error(`unknown expression ${all}`);
    return known[expr]!;
  });
}

/** A repository set up as `phaseloop init generator-evaluator` leaves it, with a queue of three stories. */
export function generatorEvaluatorRepo(): string {
  const dir = tempDir("phaseloop-ci-");
  mkdirSync(join(dir, "pipelines"), { recursive: true });
  cpSync(join(ROOT, "pipelines/generator-evaluator.yaml"), join(dir, "pipelines/generator-evaluator.yaml"));
  cpSync(join(ROOT, "pipelines/generator-evaluator"), join(dir, "pipelines/generator-evaluator"), { recursive: true });
  mkdirSync(join(dir, ".loop"));
  writeFileSync(
    join(dir, ".loop/prd.json"),
    JSON.stringify({
      userStories: [
        { id: "US-001", title: "Sign in", priority: 1, passes: false },
        { id: "US-002", title: "Sign out", priority: 2, passes: false, depends_on: ["US-001"] },
        { id: "US-003", title: "Footer: links, legal", priority: 3, passes: false },
      ],
    }),
  );
  return dir;
}
