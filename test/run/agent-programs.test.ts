/**
 * Which program a `sh -c SCRIPT` agent is checked for before a run: the first
 * simple command's, when certain; a word inside an assignment's substitution,
 * a quote or an expansion is never looked up, so a run is not refused for it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { firstWord } from "../../src/run/agent-programs.ts";
import { cli, ensureBuilt, git, tempDir, write } from "../cli/cli-helpers.ts";

const name = fc.stringMatching(/^[a-z][a-z0-9_-]{0,8}$/).filter((w) => !["cd", "do", "done", "fi", "in", "if", "for", "set", "let", "pwd", "time", "then", "else", "elif", "esac", "case", "echo", "exec", "eval", "read", "exit", "test", "type", "trap", "wait", "hash", "shift", "break", "local", "unset", "alias", "umask", "until", "while", "source", "export", "printf", "return", "select", "coproc", "ulimit", "builtin", "declare", "typeset", "getopts", "command", "continue", "function", "readonly", "true", "false"].includes(w));
const plainAssignment = fc.tuple(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,5}$/), fc.stringMatching(/^[a-z0-9_./:-]{0,8}$/)).map(([k, v]) => `${k}=${v}`);
const arg = fc.stringMatching(/^[a-z0-9_./-]{1,8}$/);
const after = fc.constantFrom("", " ", "; echo done", " | tee log", " && true", " >out", " 2>&1", "\nnext");

describe("the program of a shell script's first simple command", () => {
  it("regression: a word inside an assignment's $(…) is no program (n=$(cat src/n …) is not `src/n`)", () => {
    expect(firstWord("n=$(cat src/n 2>/dev/null || echo 0); echo $((n+1)) > src/n; echo STATUS: DONE")).toBeUndefined();
    expect(firstWord("n=`cat src/n` codex exec -")).toBeUndefined();
    expect(firstWord('MSG="hello world" codex exec -')).toBeUndefined();
    expect(firstWord("X=${Y:-z} codex")).toBeUndefined();
  });

  it("finds it after plain assignments and before operators and redirections", () => {
    expect(firstWord("FOO=1 BAR=2 codex exec -")).toBe("codex");
    expect(firstWord("claude -p|tee out")).toBe("claude");
    expect(firstWord("./bin/agent.sh>log")).toBe("./bin/agent.sh");
    expect(firstWord("2>err claude")).toBeUndefined();
    expect(firstWord(">out claude")).toBeUndefined();
    expect(firstWord("(claude)")).toBeUndefined();
    expect(firstWord("agent() { claude; }; agent")).toBeUndefined();
    expect(firstWord("'claude' -p")).toBeUndefined();
    expect(firstWord("# a comment\nclaude")).toBeUndefined();
  });

  it("property: plain assignments, then a plain word, then anything: that word", () => {
    fc.assert(
      fc.property(fc.array(plainAssignment, { maxLength: 3 }), name, fc.array(arg, { maxLength: 3 }), after, (assigns, program, args, tail) => {
        const script = [...assigns, program, ...args].join(" ") + tail;
        expect(firstWord(script)).toBe(program);
      }),
    );
  });

  it("property: a word inside a quote, a substitution or an expansion is never the program", () => {
    const wrap = fc.constantFrom((w: string) => `n=$(cat ${w})`, (w: string) => `n=\`${w}\``, (w: string) => `"${w}"`, (w: string) => `'${w}'`, (w: string) => `X="a ${w}"`, (w: string) => `$(${w})`, (w: string) => `\${X:-${w}}`, (w: string) => `{ ${w}; }`, (w: string) => `(${w})`);
    fc.assert(
      fc.property(fc.array(plainAssignment, { maxLength: 2 }), wrap, name, fc.array(arg, { maxLength: 3 }), after, (assigns, w, inner, args, tail) => {
        const script = [...assigns, w(inner), ...args].join(" ") + tail;
        const got = firstWord(script);
        expect(got === undefined || got !== inner).toBe(true);
        expect(got).toBeUndefined();
      }),
    );
  });

  it("property: whatever the script, the answer is undefined or a plain word the script starts a command with", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (script) => {
        const got = firstWord(script);
        if (got !== undefined) {
          expect(got).toMatch(/^[A-Za-z0-9_./+@-]+$/);
          expect(script).toContain(got);
        }
      }),
    );
  });
});

describe("a run whose agent script assigns from a file", () => {
  it("starts under the defaults: the script's words are not programs to look up", { timeout: 120_000 }, () => {
    ensureBuilt();
    const dir = tempDir("phaseloop-agent-programs-");
    write(dir, {
      ".gitignore": "node_modules/\n",
      "src/n": "0\n",
      "p.yaml": `phaseloop: 1
name: count
agents:
  counter: { command: [sh, -c, 'n=$(cat src/n 2>/dev/null || echo 0); echo $((n+1)) > src/n; echo STATUS: DONE'] }
tools:
  t: { read: ["**"], write: ["src/**"], bash: ["*"] }
phases:
  count:
    agent: counter
    tools: t
    prompt: "count once"
    output:
      status: { match: 'STATUS: (\\w+)', required: true }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`,
    });
    git(dir, "init", "-q");
    git(dir, "add", ".");
    git(dir, "commit", "-qm", "start");
    const r = cli(["run", "p.yaml"], dir);
    expect(r.stderr).not.toContain("AGENT_NOT_FOUND");
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });
});
