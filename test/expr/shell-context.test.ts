import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { parseTemplate, renderShell, shellContexts, type Template } from "../../src/expr/index.ts";

const tpl = (s: string): Template => {
  const t = parseTemplate(s);
  if (!t.template) throw new Error(t.diagnostics[0]?.message);
  return t.template;
};

describe("shellContexts", () => {
  it("says where each template stands", () => {
    const r = shellContexts(tpl(`a {{ x }} "b {{ x }}" "$(d {{ x }} "e{{ x }}")" x={{ x }}`));
    expect(r).toMatchObject({ ok: true, contexts: ["bare", "double", "bare", "double", "bare"] });
  });

  it("sees a quote character inside the other quotes as text", () => {
    expect(shellContexts(tpl(`echo "it's {{ x }}"`))).toMatchObject({ ok: true, contexts: ["double"] });
    expect(shellContexts(tpl(`echo \\' {{ x }} \\" {{ x }}`))).toMatchObject({ ok: true, contexts: ["bare", "bare"] });
  });

  it.each([
    ["backticks", "echo `echo {{ x }}`"],
    ["a parameter expansion", 'echo "${X:-{{ x }}}"'],
    ["arithmetic", "echo $(( {{ x }} + 1 ))"],
    ["an ANSI-C string", "echo $'a{{ x }}'"],
    ["a comment", "true # {{ x }}"],
    ["a here-document", "cat <<EOF\n{{ x }}\nEOF"],
    ["a quoted here-document", "cat <<'EOF'\nv={{ x }}\nEOF"],
    ["single quotes that are awk's program", `awk '{ print "{{ x }}" }'`],
    ["single quotes that are a script for sh -c", "sh -c 'echo {{ x }}'"],
  ])("refuses a template inside %s, located at the template", (_what, source) => {
    const r = shellContexts(tpl(source));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics[0]!.code).toBe("SHELL_TEMPLATE_CONTEXT");
    expect(source.slice(r.diagnostics[0]!.start, r.diagnostics[0]!.end)).toBe("{{ x }}");
  });

  it("closes single quotes around a template in a command's word (a commit message, say)", () => {
    expect(shellContexts(tpl("git commit -qm 'lint-fix: iteration {{ x }}' || true"))).toMatchObject({ ok: true, contexts: ["single"] });
    const r = renderShell(tpl("echo 'a {{ x }} b'"), { x: "q" });
    expect(r).toMatchObject({ ok: true, value: `echo 'a '"\${PHASELOOP_T1_x}"' b'`, env: { PHASELOOP_T1_x: "q" } });
  });

  it("accepts templates after a here-document has ended, and a # inside a word", () => {
    expect(shellContexts(tpl("cat <<EOF\nhello\nEOF\necho {{ x }} a#{{ x }}"))).toMatchObject({ ok: true, contexts: ["bare", "bare"] });
  });
});

// ── the real shell receives exactly the value, never a command ───────────────

const dir = mkdtempSync(join(tmpdir(), "phaseloop-shell-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const shells = ["dash", ...(spawnSync("bash", ["-c", "true"]).status === 0 ? ["bash"] : [])];

/** Run a rendered command in an empty folder; what it wrote to `out`, and every other file it made. */
function run(shell: string, command: string, env: Record<string, string> = {}): { out: string; stray: string[] } {
  const cwd = mkdtempSync(join(dir, "c-"));
  const r = spawnSync(shell, ["-c", command], { cwd, encoding: "utf8", timeout: 5000, env: { PATH: process.env.PATH, ...env } });
  const out = existsSync(join(cwd, "out")) ? readFileSync(join(cwd, "out"), "utf8") : `<no output; exit ${r.status}; ${r.stderr}>`;
  const stray = readdirSync(cwd).filter((f) => f !== "out");
  rmSync(cwd, { recursive: true, force: true });
  return { out, stray };
}

const hostile = fc.oneof(
  fc.constantFrom("$(touch PWNED)", "`touch PWNED`", '"; touch PWNED; "', "'; touch PWNED; '", "; touch PWNED", "&& touch PWNED", "| tee PWNED", "> PWNED", "\ntouch PWNED\n", "$HOME", "${PATH}", "\\", "\\'", '\\"', "'", '"', "", "$((1+1))", "*", "~", "!x", "#", "é日本😀"),
  fc.string({ unit: fc.constantFrom("$", "`", "'", '"', "\\", "\n", " ", ";", "&", "|", "(", ")", "{", "}", "#", "*", "<", ">", "a", "é", "😀", "\t") }),
  fc.string({ unit: "binary" }).filter((s) => !s.includes("\0") && Buffer.from(s, "utf8").toString("utf8") === s),
);

const CASES: [string, string, (v: string) => string][] = [
  ["bare", "printf %s {{ v }} > out", (v) => v],
  ["bare inside a word", "printf %s x{{ v }}y > out", (v) => `x${v}y`],
  ["double quotes", 'printf %s "{{ v }}" > out', (v) => v],
  ["double quotes with text", 'printf %s "v={{ v }}!" > out', (v) => `v=${v}!`],
  ["after text and before a bracket", "printf %s a{{ v }}[x] > out", (v) => `a${v}[x]`],
  ["a case pattern inside a substitution", 'printf %s "$(case {{ v }} in {{ v }}) printf %s {{ v }};; esac)" > out', (v) => v.replace(/\n+$/, "")],
  ["an assignment", 'A={{ v }}; printf %s "$A" > out', (v) => v],
  ["command substitution", 'printf %s "$(printf %s {{ v }})" > out', (v) => v.replace(/\n+$/, "")],
  ["double quotes in a substitution in double quotes", 'printf %s "[$(printf %s "{{ v }}")]" > out', (v) => `[${v.replace(/\n+$/, "")}]`],
  ["single quotes", "printf %s 'v={{ v }}!' > out", (v) => `v=${v}!`],
  ["single quotes beside double", `printf %s 'a'"{{ v }}"'{{ v }}' > out`, (v) => `a${v}${v}`],
  ["every context at once", `printf '%s|%s|%s' {{ v }} "{{ v }}" '{{ v }}' > out`, (v) => `${v}|${v}|${v}`],
];

describe.each(shells)("rendered commands under %s", (shell) => {
  it.each(CASES)("%s: the command receives exactly the value", (_name, source, expected) => {
    const t = tpl(source);
    fc.assert(
      fc.property(hostile, (v) => {
        const r = renderShell(t, { v });
        expect(r.ok).toBe(true);
        if (!r.ok) return;
        const got = run(shell, r.value, r.env);
        expect(got.stray).toEqual([]);
        expect(got.out).toBe(expected(v));
      }),
      { numRuns: 40 },
    );
  });
});
