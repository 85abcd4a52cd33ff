/**
 * Templates in shell commands, attacked: every escape met (a `$` before the
 * template, a `case` pattern inside `$( )`, bash as the shell, `sh -c`,
 * argv lists handed to a shell) is refused by validate with a located error,
 * and any command validate accepts, run by dash and by bash with a hostile
 * value, runs nothing of the value.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { checkArgv, parseTemplate, renderArgv, renderShell, shellContexts, type Template } from "../../src/expr/index.ts";

const tpl = (s: string): Template => {
  const t = parseTemplate(s);
  if (!t.template) throw new Error(t.diagnostics[0]?.message);
  return t.template;
};

const dir = mkdtempSync(join(tmpdir(), "phaseloop-redteam-tpl-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const shells = ["dash", ...(spawnSync("bash", ["-c", "true"]).status === 0 ? ["bash"] : [])];

/** Payloads that each make a file named PWNED if any shell reads them as code. */
const PAYLOADS = [
  "(touch PWNED)",
  "$(touch PWNED)",
  "`touch PWNED`",
  "; touch PWNED",
  "touch PWNED",
  "a\\'; touch PWNED; #",
  "'; touch PWNED; '",
  '"; touch PWNED; "',
  "\ntouch PWNED\n",
  "x) touch PWNED;; esac; case x in x",
  "a[$(touch PWNED)]",
  "x[`touch PWNED`]",
  "$((`touch PWNED`))",
  "{touch,PWNED}",
  "PWNED=1 touch PWNED",
  "EOF\ntouch PWNED\nEOF",
];

function runs(shell: string, command: string, env: Record<string, string>): boolean {
  const cwd = mkdtempSync(join(dir, "c-"));
  spawnSync(shell, ["-c", command], { cwd, encoding: "utf8", timeout: 5000, env: { PATH: process.env.PATH, ...env }, input: "" });
  const pwned = existsSync(join(cwd, "PWNED"));
  rmSync(cwd, { recursive: true, force: true });
  return pwned;
}

describe("the escapes as met are refused, located at the template", () => {
  it.each([
    ["the GitHub Actions habit: a $ before the template, in double quotes", 'echo "note: ${{ phases.approve.answer }}"'],
    ["a $ before a bare template (bash as /bin/sh)", "echo ${{ x }}"],
    ["a template as the program", "{{ x }} --version"],
    ["a template in sh -c's script", 'sh -c "echo {{ x }}"'],
    ["a template in single quotes handed to a shell", "bash -c 'echo {{ x }}'"],
    ["eval", 'eval "echo {{ x }}"'],
    ["piped into a shell", 'printf "%s" "{{ x }}" | bash'],
    ["a here-string into a shell", "sh <<< {{ x }}"],
    ["bash arithmetic in [[ ]]", '[[ "{{ x }}" -gt 1 ]] && echo big'],
    ["an array subscript", "a[{{ x }}]=1"],
    ["a variable name", "read -r {{ x }} < /dev/null"],
    ["printf -v", "printf -v {{ x }} %s 1"],
    ["python -c", 'python3 -c "print(\\"{{ x }}\\")"'],
    ["awk's program", 'awk "BEGIN { print \\"{{ x }}\\" }"'],
    ["sed's script", 'sed "s/a/{{ x }}/" file'],
    ["find -exec sh -c", 'find . -exec sh -c "echo {{ x }}" \\;'],
    ["env -S", 'env -S "{{ x }}"'],
    ["bash's $[ ]", "echo $[ {{ x }} + 1 ]"],
    ["arithmetic command", "(( {{ x }} > 1 )) && echo big"],
  ])("%s", (_what, source) => {
    const r = shellContexts(tpl(source));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics[0]!.code).toBe("SHELL_TEMPLATE_CONTEXT");
    expect(source.slice(r.diagnostics[0]!.start, r.diagnostics[0]!.end)).toMatch(/^\{\{.*\}\}$/);
  });

  it("a case pattern inside $( ) no longer loses track: what follows is still judged", () => {
    // before: the pattern's ")" closed the $( ), and the template after it was "inside double quotes" when it was bare
    const t = tpl('echo "$(case x in x) echo ;; esac)" {{ x }}; echo "$(case x in x) echo {{ x }};; esac)"');
    const r = renderShell(t, { x: "(touch PWNED)" });
    expect(r.ok).toBe(true);
    for (const shell of shells) if (r.ok) expect(runs(shell, r.value, r.env)).toBe(false);
  });

  it("argv lists: a shell's script is rendered as a shell command; a program word takes no value", () => {
    const list = (xs: string[]) => xs.map(tpl);
    expect(checkArgv(list(["sh", "-c", "echo {{ x }}"]))).toEqual([]);
    expect(checkArgv(list(["sh", "-c", "echo ${{ x }}"]))[0]?.diagnostic.code).toBe("SHELL_TEMPLATE_CONTEXT");
    expect(checkArgv(list(["sh", "-c", "{{ x }}"]))[0]?.diagnostic.code).toBe("SHELL_TEMPLATE_CONTEXT");
    expect(checkArgv(list(["{{ x }}", "a"]))[0]?.element).toBe(0);
    expect(checkArgv(list(["python3", "-c", "print('{{ x }}')"]))[0]?.element).toBe(2);
    expect(checkArgv(list(["env", "A=1", "bash", "-lc", "echo {{ x }}"]))).toEqual([]);
    // the user's own words may be the program: the recipes' `[sh, -c, "{{ params.check }}"]`
    expect(checkArgv(list(["sh", "-c", "{{ params.check }}"]))).toEqual([]);
    expect(checkArgv(list(["node", "{{ pipeline.dir }}/agent.mjs", "{{ x }}"]))).toEqual([]);
    for (const payload of PAYLOADS) {
      const r = renderArgv(list(["sh", "-c", 'printf %s "{{ x }}" > out; echo {{ x }}']), { x: payload });
      expect(r.ok).toBe(true);
      if (!r.ok) continue;
      for (const shell of shells) {
        const cwd = mkdtempSync(join(dir, "a-"));
        spawnSync(shell, r.argv.slice(1), { cwd, env: { PATH: process.env.PATH, ...r.env } });
        expect(existsSync(join(cwd, "PWNED"))).toBe(false);
        expect(readFileSync(join(cwd, "out"), "utf8")).toBe(payload);
        rmSync(cwd, { recursive: true, force: true });
      }
    }
    const user = renderArgv(list(["sh", "-c", "{{ params.check }}"]), { params: { check: "echo ok" } });
    expect(user).toEqual({ ok: true, argv: ["sh", "-c", "echo ok"], env: {} });
  });
});

/** Shell text made of the pieces attacks are made of, with templates among them. */
const PIECES = [
  "echo ", "printf %s ", '"', "'", "$(", ")", "`", "$", "${", "}", "$((", "))", "case x in x) ", ";; esac", "(", " ", ";", "\n", "|", " | sh", "sh -c ",
  "eval ", "<<EOF\n", "\nEOF\n", "<<< ", "[[ ", " -eq 1 ]]", "#", "\\", "read ", "a[", "]=1", "x=", "{{ v }}", "{{ v }}", "{{ v }}", "bash", " > out", "&&", "-c ", "{", "}", "'\"", "env ",
];
const source = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 10 }).map((xs) => xs.join(""));

describe("whatever validate accepts runs nothing of the value", () => {
  it.each(shells)("under %s: any accepted command, any payload", { timeout: 120_000 }, (shell) => {
    let accepted = 0;
    fc.assert(
      fc.property(source, fc.constantFrom(...PAYLOADS), (text, payload) => {
        const parsed = parseTemplate(text);
        if (!parsed.template || !shellContexts(parsed.template).ok) return;
        accepted++;
        const r = renderShell(parsed.template, { v: payload });
        if (!r.ok) return;
        expect({ text, payload, pwned: runs(shell, r.value, r.env) }).toEqual({ text, payload, pwned: false });
      }),
      { numRuns: 150 },
    );
    expect(accepted).toBeGreaterThan(20);
  });
});

describe("validate refuses them in a pipeline, at the template", () => {
  it("run:, hooks and argv lists alike", () => {
    const repo = mkdtempSync(join(dir, "p-"));
    mkdirSync(repo, { recursive: true });
    writeFileSync(
      join(repo, "p.yaml"),
      [
        "phaseloop: 1",
        "name: p",
        "stop: { max_iterations: 1 }",
        "phases:",
        "  approve:",
        "    ask: Ship it?",
        "  note:",
        `    run: 'echo "note: \${{ phases.approve.answer }}"'`,
        "  viash:",
        '    run: [sh, -c, "{{ phases.approve.answer }}"]',
        "hooks:",
        "  on_complete: 'echo \"$(case x in x) echo ;; esac)\" ${{ run.id }}'",
        "",
      ].join("\n"),
    );
    const cli = join(__dirname, "../../dist/cli.cjs");
    const r = spawnSync(process.execPath, [cli, "validate", "p.yaml"], { cwd: repo, encoding: "utf8" });
    expect(r.status).toBe(2);
    const errors = r.stdout + r.stderr;
    expect(errors).toMatch(/p\.yaml:8:\d+: error SHELL_TEMPLATE_CONTEXT .*right after "\$"/);
    expect(errors).toMatch(/p\.yaml:10:\d+: error SHELL_TEMPLATE_CONTEXT/);
    expect(errors).toMatch(/p\.yaml:12:\d+: error SHELL_TEMPLATE_CONTEXT/);
  });

  it("a command agent's script: the prompt as data is rendered, as the script or after -c in args is refused", () => {
    const repo = mkdtempSync(join(dir, "q-"));
    const agent = (command: string, args = "") => `phaseloop: 1
name: p
agents:
  w: { command: ${command}${args ? `, args: ${args}` : ""} }
phases:
  a: { agent: w, prompt: "hi", next: [{ stop: complete }] }
stop: { max_iterations: 1 }
`;
    const cli = join(__dirname, "../../dist/cli.cjs");
    const validate = (text: string) => {
      writeFileSync(join(repo, "p.yaml"), text);
      return spawnSync(process.execPath, [cli, "validate", "p.yaml"], { cwd: repo, encoding: "utf8" });
    };
    expect(validate(agent('[sh, -c, "mytool --file {{ prompt_file }} \\"{{ prompt }}\\""]')).status).toBe(0);
    const asScript = validate(agent('[sh, -c, "{{ prompt }}"]'));
    expect(asScript.status).toBe(2);
    expect(asScript.stderr).toMatch(/p\.yaml:4:\d+: error SHELL_TEMPLATE_CONTEXT/);
    const inArgs = validate(agent("[sh, -c]", '["{{ prompt }}"]'));
    expect(inArgs.status).toBe(2);
    expect(inArgs.stderr).toMatch(/error SHELL_TEMPLATE_CONTEXT/);
  });
});
