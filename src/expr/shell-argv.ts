/**
 * Templates in an argv list. No shell reads the elements, so a value is one
 * argument whatever it holds, except where an element is a program: the
 * program itself (`[ "{{ x }}", … ]`), the script of a shell
 * (`[sh, -c, "…"]`, rendered as a shell command, its values in environment
 * variables), or the code of another interpreter (`[python3, -c, "…"]`).
 * There only the user's own words (params, the pipeline's folder) may stand.
 */
import type { ExprDiagnostic } from "./diagnostic.ts";
import type { JsonValue } from "./json-value.ts";
import { isUserWord, shellContexts } from "./shell-context.ts";
import { renderShell } from "./shell-render.ts";
import { isShellScriptWord, wordRole } from "./shell-words.ts";
import { renderTemplate, type Template } from "./template.ts";

export type ArgvRole = "data" | "script" | "program";

function staticText(t: Template): string | undefined {
  return t.parts.every((p) => p.kind === "text") ? t.parts.map((p) => (p.kind === "text" ? p.text : "")).join("") : undefined;
}

/** What each element of an argv list is: data, a shell script, or a program word. */
export function argvRoles(elements: Template[]): ArgvRole[] {
  const words = elements.map(staticText);
  return elements.map((t, i) => {
    if (t.parts.every((p) => p.kind === "text")) return "data";
    const before = words.slice(0, i);
    const first = t.parts[0]!;
    const prefix = first.kind === "text" ? first.text : "";
    if (isShellScriptWord(before)) return "script";
    const role = wordRole(before, prefix, false);
    return role === "command" || role === "code" ? "program" : "data";
  });
}

/**
 * Every template of an argv list that cannot stand where it does, each with
 * its element's index. `scripts: false`: the list is rendered as plain text
 * (an MCP server's command), so a shell's script takes only the user's words.
 */
export function checkArgv(elements: Template[], scripts = true): { element: number; diagnostic: ExprDiagnostic }[] {
  const out: { element: number; diagnostic: ExprDiagnostic }[] = [];
  argvRoles(elements).forEach((role, i) => {
    const t = elements[i]!;
    if (role === "script" && scripts) {
      const r = shellContexts(t);
      if (!r.ok) for (const d of r.diagnostics) out.push({ element: i, diagnostic: d });
    } else if (role !== "data") {
      for (const p of t.parts) {
        if (p.kind === "expr" && !isUserWord(p.expr)) {
          out.push({ element: i, diagnostic: { code: "SHELL_TEMPLATE_CONTEXT", message: "a template is the program this command runs, or its code: the value would be run", start: p.start, end: p.end, hint: "pass the value as an argument after the program's own words (its script reads it as $1, sys.argv[1], …); only params and pipeline.dir may name a program" } });
        }
      }
    }
  });
  return out;
}

export type ArgvRender = { ok: true; argv: string[]; env: Record<string, string> } | { ok: false; error: string };

/** Render an argv list: data elements as they are, a shell script with its values in environment variables. */
export function renderArgv(elements: Template[], context: Record<string, JsonValue>, render: (t: Template) => { ok: true; value: string } | { ok: false; error: string } = (t) => renderTemplate(t, context)): ArgvRender {
  const bad = checkArgv(elements)[0];
  if (bad) return { ok: false, error: `run[${bad.element}]: ${bad.diagnostic.message}` };
  const roles = argvRoles(elements);
  const argv: string[] = [];
  const env: Record<string, string> = {};
  let n = 1;
  for (let i = 0; i < elements.length; i++) {
    const t = elements[i]!;
    if (roles[i] === "script") {
      const r = renderShell(t, context, n);
      if (!r.ok) return { ok: false, error: `run[${i}]: ${r.error}` };
      n += t.parts.filter((p) => p.kind === "expr").length;
      Object.assign(env, r.env);
      argv.push(r.value);
    } else {
      const r = render(t);
      if (!r.ok) return { ok: false, error: `run[${i}]: ${r.error}` };
      argv.push(r.value);
    }
  }
  return { ok: true, argv, env };
}
