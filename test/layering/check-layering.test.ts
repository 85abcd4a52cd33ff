import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { checkTree, findCycles, importGraph, importsInText, layeringProblems, parseLayers, type ImportEdge, type Layers } from "./check-layering.ts";

/** A graph from `"a/x.ts -> b/y.ts"` lines, every import on line 1. */
function graph(...lines: string[]): { files: string[]; edges: ImportEdge[] } {
  const edges = lines.map((l) => {
    const [from, to] = l.split(" -> ") as [string, string];
    return { from, to, line: 1 };
  });
  const files = [...new Set(edges.flatMap((e) => [e.from, e.to]))].sort();
  return { files, edges };
}

const LAYERS: Layers = [["base", "gen"], ["core"], ["shell"], ["cli.ts"]];
const check = (g: { files: string[]; edges: ImportEdge[] }, layers = LAYERS) => layeringProblems(g.files, g.edges, layers);

describe("reading imports", () => {
  it("finds static, type-only, re-exported and dynamic imports, with their lines", () => {
    const text = [
      'import { a } from "./a.ts";',
      'import type { B } from "../b/b.ts";',
      'export * from "./c.ts";',
      'export { d } from "./d.js";',
      "const e = await import(",
      '  "./e.ts");',
      'type F = typeof import("./f.ts");',
      'import "./g.ts";',
      "import {",
      "  h,",
      '} from "./h.ts";',
      'import fs from "node:fs";',
    ].join("\n");
    expect(importsInText(text)).toEqual([
      { specifier: "./a.ts", line: 1 },
      { specifier: "../b/b.ts", line: 2 },
      { specifier: "./c.ts", line: 3 },
      { specifier: "./d.js", line: 4 },
      { specifier: "./e.ts", line: 6 },
      { specifier: "./f.ts", line: 7 },
      { specifier: "./g.ts", line: 8 },
      { specifier: "./h.ts", line: 11 },
      { specifier: "node:fs", line: 12 },
    ]);
  });

  it("ignores imports written in comments and strings", () => {
    const text = ['// import { a } from "./a.ts";', "/* import b from './b.ts' */", 'const s = "import c from \'./c.ts\'";', "const t = `export * from './d.ts'`;"].join("\n");
    expect(importsInText(text)).toEqual([]);
  });

  it("resolves a specifier against its file, reads .js as the .ts it is built from, and leaves packages out", () => {
    const texts: Record<string, string> = { "run/a.ts": 'import "../machine/b.js";\nimport "./c.ts";\nimport "yaml";\nimport "node:fs";' };
    expect(importGraph(["run/a.ts"], (f) => texts[f]!)).toEqual([
      { from: "run/a.ts", to: "machine/b.ts", line: 1 },
      { from: "run/a.ts", to: "run/c.ts", line: 2 },
    ]);
  });
});

describe("reading the documented order", () => {
  it("takes the numbered items of the Layers section, first at the bottom, every unit named in an item's head", () => {
    const md = [
      "# Architecture",
      "1. `ignored/`: a list before the section",
      "## Layers",
      "Bottom first.",
      "",
      "1. `diagnostics/`, `generated/`: what every layer reports with, not `expr/`",
      "2. `expr/` — the language",
      "   a continuation naming `pipeline/` is no item",
      "10. `cli.ts`, `index.ts`,",
      "    `pipeline/spec.ts`: an item's head runs over its indented lines",
      "## The pure core",
      "1. `after/`: a list after the section",
    ].join("\n");
    expect(parseLayers(md)).toEqual([["diagnostics", "generated"], ["expr"], ["cli.ts", "index.ts", "pipeline/spec.ts"]]);
  });
});

describe("the rules", () => {
  it("passes imports inside a folder and down the layers", () => {
    expect(check(graph("cli.ts -> shell/run.ts", "shell/run.ts -> shell/store.ts", "shell/run.ts -> core/machine.ts", "core/machine.ts -> base/diagnostic.ts", "core/machine.ts -> gen/version.ts"))).toEqual([]);
  });

  it("names an import that climbs, with its file, line and the two layers", () => {
    const g = graph("core/machine.ts -> base/diagnostic.ts");
    g.edges.push({ from: "core/machine.ts", to: "shell/store.ts", line: 7 });
    g.files.push("shell/store.ts");
    expect(check(g)).toEqual(["src/core/machine.ts:7 imports src/shell/store.ts: src/core/ (layer 2) climbs to src/shell/ (layer 3)"]);
  });

  it("refuses an import between two folders of one layer, either way", () => {
    expect(check(graph("base/a.ts -> gen/b.ts"))).toEqual(["src/base/a.ts:1 imports src/gen/b.ts: src/base/ and src/gen/ share layer 1, and neither may import the other"]);
  });

  it("names a folder or top-level file that no layer holds", () => {
    expect(check(graph("extra/a.ts -> base/b.ts", "main.ts -> base/b.ts"))).toEqual(["src/extra/ is in no layer of the documented order", "src/main.ts is in no layer of the documented order"]);
  });

  it("holds a folder inside another, or one file, to its own layer when the order names it", () => {
    const layers: Layers = [["core/words.ts"], ["base"], ["core"], ["base/top"]];
    expect(check(graph("base/a.ts -> core/words.ts", "core/b.ts -> base/a.ts", "base/top/t.ts -> core/b.ts"), layers)).toEqual([]);
    expect(check(graph("core/words.ts -> base/a.ts", "base/a.ts -> base/top/t.ts"), layers)).toEqual([
      "src/core/words.ts:1 imports src/base/a.ts: src/core/words.ts (layer 1) climbs to src/base/ (layer 2)",
      "src/base/a.ts:1 imports src/base/top/t.ts: src/base/ (layer 2) climbs to src/base/top/ (layer 4)",
    ]);
  });

  it("names a cycle inside one folder with its path", () => {
    expect(check(graph("core/a.ts -> core/b.ts", "core/b.ts -> core/c.ts", "core/c.ts -> core/a.ts"))).toEqual(["import cycle: src/core/a.ts → src/core/b.ts → src/core/c.ts → src/core/a.ts"]);
  });

  it("names a file that imports itself", () => {
    expect(check(graph("core/a.ts -> core/a.ts"))).toEqual(["import cycle: src/core/a.ts → src/core/a.ts"]);
  });

  it("gives the shortest way round a knot and names every file in it", () => {
    const problems = check(graph("core/a.ts -> core/b.ts", "core/b.ts -> core/a.ts", "core/b.ts -> core/c.ts", "core/c.ts -> core/d.ts", "core/d.ts -> core/b.ts"));
    expect(problems).toEqual(["import cycle: src/core/a.ts → src/core/b.ts → src/core/a.ts (one way round a knot of 4 files: src/core/a.ts, src/core/b.ts, src/core/c.ts, src/core/d.ts)"]);
  });

  it("names both the climb and the cycle of a cycle across layers", () => {
    expect(check(graph("shell/a.ts -> core/b.ts", "core/b.ts -> shell/a.ts"))).toEqual([
      "src/core/b.ts:1 imports src/shell/a.ts: src/core/ (layer 2) climbs to src/shell/ (layer 3)",
      "import cycle: src/core/b.ts → src/shell/a.ts → src/core/b.ts",
    ]);
  });
});

describe("checking a tree on disk", () => {
  const root = mkdtempSync(join(tmpdir(), "phaseloop-layering-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("reads every file of the source root and the order from the document", () => {
    mkdirSync(join(root, "src/core"), { recursive: true });
    mkdirSync(join(root, "src/shell/deep"), { recursive: true });
    writeFileSync(join(root, "src/core/a.ts"), 'import type { S } from "../shell/deep/s.ts";\nexport type A = S;\n');
    writeFileSync(join(root, "src/shell/deep/s.ts"), 'export type S = string;\nexport const load = () => import("../../core/a.js");\n');
    writeFileSync(join(root, "src/cli.ts"), 'import "./shell/deep/s.ts";\n');
    writeFileSync(join(root, "arch.md"), "## Layers\n\n1. `core/`\n2. `shell/`\n3. `cli.ts`\n");
    const { problems } = checkTree(join(root, "src"), join(root, "arch.md"));
    const src = `${join(root, "src")}/`;
    expect(problems).toEqual([`${src}core/a.ts:1 imports ${src}shell/deep/s.ts: ${src}core/ (layer 1) climbs to ${src}shell/ (layer 2)`, `import cycle: ${src}core/a.ts → ${src}shell/deep/s.ts → ${src}core/a.ts`]);
  });
});

/** A random acyclic graph: file i imports only files j < i, and a file's layer never lies below those it imports. */
const acyclic = fc
  .integer({ min: 1, max: 14 })
  .chain((n) =>
    fc.record({
      n: fc.constant(n),
      // each file's layer: a nondecreasing sequence, so edges i → j < i go down or stay
      steps: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 40 }),
    }),
  )
  .map(({ n, steps, edges }) => {
    let layer = 0;
    const folders = steps.map((up) => `f${(layer += up ? 1 : 0)}`);
    const file = (i: number) => `${folders[i]}/m${i}.ts`;
    const layers: Layers = [...new Set(folders)].map((f) => [f]);
    // each pair as an import from the later file to the earlier, once
    const pairs = [...new Set(edges.filter(([a, b]) => a !== b).map(([a, b]) => `${Math.max(a, b)}>${Math.min(a, b)}`))].map((k) => k.split(">").map(Number) as [number, number]);
    return { files: Array.from({ length: n }, (_, i) => file(i)), edges: pairs.map(([a, b]) => ({ from: file(a), to: file(b), line: 1 })), layers };
  });

describe("properties", () => {
  it("an acyclic graph whose imports go down the layers passes", () => {
    fc.assert(
      fc.property(acyclic, (g) => {
        expect(layeringProblems(g.files, g.edges, g.layers)).toEqual([]);
      }),
    );
  });

  it("adding the back edge of any import makes a cycle through both files, and a climb when they are in different layers", () => {
    fc.assert(
      fc.property(
        acyclic.filter((g) => g.edges.length > 0),
        fc.nat(),
        (g, pick) => {
          const e = g.edges[pick % g.edges.length]!;
          const problems = layeringProblems(g.files, [...g.edges, { from: e.to, to: e.from, line: 9 }], g.layers);
          const cycles = problems.filter((p) => p.startsWith("import cycle: "));
          expect(cycles.some((c) => c.includes(`src/${e.from}`) && c.includes(`src/${e.to}`))).toBe(true);
          const climbs = problems.filter((p) => p.includes(" climbs to "));
          expect(climbs).toEqual(e.from.split("/")[0] === e.to.split("/")[0] ? [] : [expect.stringContaining(`src/${e.to}:9 imports src/${e.from}`)]);
        },
      ),
    );
  });

  it("a cycle is found exactly when the graph has one, and each path found walks real imports back to its start", () => {
    const anyGraph = fc.integer({ min: 1, max: 9 }).chain((n) => fc.record({ n: fc.constant(n), edges: fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 20 }) }));
    fc.assert(
      fc.property(anyGraph, ({ n, edges }) => {
        const nodes = Array.from({ length: n }, (_, i) => `n${i}`);
        const es = edges.map(([a, b]) => ({ from: `n${a}`, to: `n${b}` }));
        const has = new Set(es.map((e) => `${e.from}>${e.to}`));
        // Kahn's algorithm: a graph is acyclic when every node can be removed
        const indegree = new Map(nodes.map((x) => [x, 0]));
        for (const k of has) indegree.set(k.split(">")[1]!, indegree.get(k.split(">")[1]!)! + 1);
        const ready = nodes.filter((x) => indegree.get(x) === 0);
        let removed = 0;
        while (ready.length > 0) {
          const x = ready.pop()!;
          removed++;
          for (const k of has) {
            const [a, b] = k.split(">") as [string, string];
            if (a !== x) continue;
            indegree.set(b, indegree.get(b)! - 1);
            if (indegree.get(b) === 0) ready.push(b);
          }
        }
        const cycles = findCycles(nodes, es);
        expect(cycles.length > 0).toBe(removed < n);
        for (const { path, files } of cycles) {
          expect(path[0]).toBe(path.at(-1));
          for (let i = 0; i + 1 < path.length; i++) expect(has.has(`${path[i]}>${path[i + 1]}`)).toBe(true);
          for (const f of path) expect(files).toContain(f);
        }
      }),
    );
  });
});
