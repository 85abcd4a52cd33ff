/**
 * One host: `node:fs`, `node:child_process` and the clock are reached only
 * through src/host/ (the real host is the one place that imports them); the
 * rest of the shell is given a host (the run's ctx.host, a command's hostOf(io)).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

/** The browser's code (served by `phaseloop ui`): no host there, the page reads the browser's own clock. */
const BROWSER = "src/ui-page/";


function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

/** What a file reaches directly: the modules of the host it imports, and the clock reads in its code. */
function reaches(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^;]*?from\s+"(node:(?:fs|fs\/promises|child_process))"/gm)) out.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*"(node:(?:fs|fs\/promises|child_process))"\s*\)/g)) out.push(m[1]!);
  const code = text.replace(/\/\*[\s\S]*?\*\/|(?<!:)\/\/.*$/gm, "");
  for (const m of code.matchAll(/\bDate\.now\(\)|\bnew Date\(\)|\bperformance\.now\(\)/g)) out.push(m[0]);
  return [...new Set(out)];
}

const shell = sources("src").filter((f) => !f.startsWith("src/host/") && !f.startsWith(BROWSER));

describe("one host", () => {
  it("node:fs, node:child_process and the clock are reached only through src/host/", () => {
    const direct = shell.filter((f) => reaches(f).length > 0).sort().map((f) => `${f}: ${reaches(f).join(", ")}`);
    expect(direct, "reach the world through the host (ctx.host, or the host a command is given)").toEqual([]);
  });

  it("the host is where the world is reached", () => {
    expect(reaches("src/host/node-files.ts")).toContain("node:fs");
    expect(reaches("src/host/node-clock.ts")).toEqual(expect.arrayContaining(["Date.now()", "performance.now()"]));
    for (const f of ["src/host/host.ts", "src/host/memory-host.ts", "src/host/fake-clock.ts"]) expect(reaches(f), f).toEqual([]);
  });
});
