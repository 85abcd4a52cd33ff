/**
 * The program each agent starts, as far as it can be known before a run:
 * a preset's CLI, a command's first word, or, for `sh -c SCRIPT`, the program
 * of the script's first simple command, when that is certain (the recipes take
 * their agent as a param that way); when it is not, nothing is checked.
 * Pure: templates are rendered from the params alone, and an argument that
 * needs more than that is left unchecked.
 */
import { presetNamed } from "../pipeline/presets/registry.ts";
import { parseTemplate, renderTemplate, templateReferences } from "../expr/index.ts";
import type { Machine } from "../machine/types.ts";
import type { AgentSpec, JsonValue } from "../pipeline/spec.ts";

export interface AgentProgram {
  agent: string;
  /** As a spawn would look it up: a name on PATH, or a path. */
  program: string;
  /** Where the program is written in the pipeline. */
  pointer: string;
  /** The command that prints its version, for presets. */
  versionArgv?: string[];
  /** What run.json records when there is no version command. */
  label: string;
  /** The param that supplies the program, when one does. */
  viaParam?: string;
}

const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ash", "ksh", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env sh"]);
/** Words a script may start with that are not programs to look for. */
const SHELL_WORDS = new Set(["cd", "echo", "printf", "exec", "eval", "set", "export", "true", "false", "test", "[", ":", ".", "source", "if", "for", "while", "until", "case", "{", "(", "!", "read", "exit", "command", "type", "trap", "unset", "local", "return", "wait", "time", "then", "do", "done", "fi", "esac", "elif", "else", "in", "function", "select", "coproc", "alias", "ulimit", "umask", "shift", "break", "continue", "declare", "typeset", "readonly", "let", "builtin", "hash", "getopts", "pwd"]);

export function agentPrograms(machine: Machine, params: Record<string, JsonValue>): AgentProgram[] {
  const out: AgentProgram[] = [];
  for (const [name, agent] of Object.entries(machine.agents)) {
    const found = programOf(name, agent, params);
    if (found) out.push(found);
  }
  return out;
}

function programOf(name: string, agent: AgentSpec, params: Record<string, JsonValue>): AgentProgram | undefined {
  if (agent.command === undefined) {
    const argv = presetNamed(agent.preset)?.versionArgv;
    if (!argv?.[0]) return undefined;
    return { agent: name, program: argv[0], pointer: `/agents/${name}/preset`, versionArgv: argv, label: argv[0] };
  }
  const first = renderParams(agent.command[0] ?? "", params);
  if (first === undefined || first.text.trim() === "") return undefined;
  const program = first.text.trim();
  const script = agent.command[1] !== undefined && /^-[a-z]*c$/.test(agent.command[1]) ? agent.command[2] : undefined;
  if (SHELLS.has(program) && script !== undefined) {
    const rendered = renderParams(script, params);
    const word = rendered === undefined ? undefined : firstWord(rendered.text);
    if (word === undefined || rendered === undefined) return { agent: name, program, pointer: `/agents/${name}/command/0`, label: `command: ${program}` };
    return { agent: name, program: word, pointer: `/agents/${name}/command/2`, label: `command: ${word}`, ...(rendered.param === undefined ? {} : { viaParam: rendered.param }) };
  }
  return { agent: name, program, pointer: `/agents/${name}/command/0`, label: `command: ${program}`, ...(first.param === undefined ? {} : { viaParam: first.param }) };
}

/** A template rendered from params alone, and the one param it reads, if one. */
function renderParams(source: string, params: Record<string, JsonValue>): { text: string; param?: string } | undefined {
  const { template } = parseTemplate(source);
  if (!template) return undefined;
  const refs = templateReferences(template);
  if (refs.some((r) => r.path[0] !== "params")) return undefined;
  const r = renderTemplate(template, { params });
  if (!r.ok) return undefined;
  const names = new Set(refs.map((ref) => ref.path[1]));
  const [only] = names;
  return names.size === 1 && only !== undefined ? { text: r.value, param: only } : { text: r.value };
}

/**
 * The program a script starts with, when that is certain: the first simple
 * command of the script, after `VAR=value` assignments whose values are plain
 * words, as a plain word ended by a blank, a `;`, `|`, `&` or a redirection.
 * Anything less certain (a quote, an expansion, a substitution, a redirection
 * first, a compound command, a shell builtin) is no program to look up.
 */
export function firstWord(script: string): string | undefined {
  let rest = script.replace(/^[ \t\n]+/, "");
  for (;;) {
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(rest)) {
      // an assignment whose value is a plain word is skipped; one with quotes, `$(`, `${`, a backquote is not understood
      const plain = /^[A-Za-z_][A-Za-z0-9_]*=[A-Za-z0-9_./+@:,%=-]*(?:[ \t]+|$)/.exec(rest);
      if (!plain) return undefined;
      rest = rest.slice(plain[0].length);
      continue;
    }
    const m = /^([A-Za-z0-9_./+@-]+)(?=$|[ \t\n;|&<>])/.exec(rest);
    if (!m) return undefined;
    const word = m[1]!;
    // `2>err cmd`: a redirection's file descriptor, not a command
    if (/^\d+$/.test(word) && /^[<>]/.test(rest.slice(word.length))) return undefined;
    return SHELL_WORDS.has(word) ? undefined : word;
  }
}
