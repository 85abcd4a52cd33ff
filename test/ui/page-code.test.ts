import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { displayLines } from "../../src/ui-page/phase-panel.ts";

/** Every module the page's bundle takes in, following the imports that are not type-only. */
function bundled(entry: string, seen = new Set<string>()): Set<string> {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const text = readFileSync(entry, "utf8");
  for (const m of text.matchAll(/^import\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gm)) {
    const spec = m[1]!;
    if (spec.startsWith(".")) bundled(resolve(dirname(entry), spec), seen);
    else seen.add(spec);
  }
  return seen;
}

describe("the page's code", () => {
  it("takes in no Node module, no package and no code that touches the clock or the process: it runs in a browser", () => {
    const modules = [...bundled(resolve("src/ui-page/main.ts"))];
    expect(modules.filter((m) => !m.startsWith("/"))).toEqual([]);
    for (const file of modules) {
      const code = readFileSync(file, "utf8").replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, "");
      expect(code, file).not.toMatch(/(?<![\w./-])process\.|require\(/);
    }
    // the fold the server and the page share is among them
    expect(modules).toContain(resolve("src/ui/run-view.ts"));
    expect(readdirSync("src/ui-page").filter((f) => f.endsWith(".ts")).every((f) => modules.includes(resolve(join("src/ui-page", f))))).toBe(true);
  });

  it("shows an agent's JSON event stream as what it says", () => {
    expect(displayLines(JSON.stringify({ type: "assistant", message: { content: [{ type: "text", text: "Reading\nTASK.md" }, { type: "tool_use", name: "Edit", input: { file: "a.ts" } }] } }))).toEqual(["Reading", "TASK.md", '→ Edit {"file":"a.ts"}']);
    expect(displayLines(JSON.stringify({ type: "result", is_error: false, result: "done\nmore" }))).toEqual(["✓ done"]);
    expect(displayLines(JSON.stringify({ type: "item.completed", item: { type: "agent_message", text: "hi" } }))).toEqual(["hi"]);
    expect(displayLines(JSON.stringify({ type: "system", subtype: "init" }))).toEqual([]);
    expect(displayLines("plain {text")).toEqual(["plain {text"]);
    expect(displayLines("{not json")).toEqual(["{not json"]);
  });
});
