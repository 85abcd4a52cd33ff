import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseTemplate, renderTemplate, usesFunction, type EvalEnv } from "../../src/expr/index.ts";

// file() asks its environment to read; a pure test supplies the environment
const render = (text: string, context: Record<string, string> = {}, env?: EvalEnv) => {
  const t = parseTemplate(text).template!;
  return renderTemplate(t, context, env ? { env } : {});
};
const files = (entries: Record<string, string>): EvalEnv => ({
  readFile: (path, max) => {
    const text = entries[path];
    if (text === undefined) throw new Error("no such file in the workdir");
    return text.slice(0, max);
  },
});

describe("file()", () => {
  it("puts the file's content into the text, never rendered as a template itself", () => {
    const env = files({ "TASK.md": "Do {{ params.x }} now.\n" });
    expect(render("{{ file('TASK.md') }}", {}, env)).toEqual({ ok: true, value: "Do {{ params.x }} now.\n" });
  });
  it("takes its path from the context and passes the size cap (default 100000)", () => {
    const seen: [string, number][] = [];
    const env: EvalEnv = { readFile: (p, n) => (seen.push([p, n]), "x") };
    expect(render("{{ file(name) }}{{ file(name, 10) }}", { name: "a.md" }, env)).toEqual({ ok: true, value: "xx" });
    expect(seen).toEqual([["a.md", 100_000], ["a.md", 10]]);
  });
  it("reports a file it cannot read as an error naming the path", () => {
    const r = render("{{ file('gone.md') }}", {}, files({}));
    expect(r).toMatchObject({ ok: false, error: 'file("gone.md"): no such file in the workdir' });
  });
  it("is an error without an environment that reads (anywhere but a prompt)", () => {
    expect(render("{{ file('TASK.md') }}")).toMatchObject({ ok: false, error: "file() is read only when a prompt is rendered" });
  });
  it("refuses a size cap out of range and a path that is not text", () => {
    const env = files({ a: "x" });
    expect(render("{{ file('a', 0) }}", {}, env)).toMatchObject({ ok: false });
    expect(render("{{ file('a', 2000000) }}", {}, env)).toMatchObject({ ok: false });
    expect(render("{{ file(3) }}", {}, env)).toMatchObject({ ok: false });
  });
  it("never lets any file content change the text around it", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (before, content) => {
        const r = render(`${before.replace(/[{}\\]/g, "")}|{{ file('f') }}|`, {}, files({ f: content }));
        return r.ok && r.value === `${before.replace(/[{}\\]/g, "")}|${content}|`;
      }),
    );
  });
  it("is found wherever a template calls it", () => {
    expect(usesFunction(parseTemplate("a {{ x ? upper(file('T')) : '' }}").template!, "file")).toBe(true);
    expect(usesFunction(parseTemplate("a {{ files }} {{ len(history) }}").template!, "file")).toBe(false);
  });
});
