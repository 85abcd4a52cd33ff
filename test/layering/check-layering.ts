/**
 * The layering of src/, checked: every import either stays inside its folder or goes down
 * the order docs/architecture.md gives, and no file reaches itself through imports. The
 * order is read from the document itself (its "Layers" section), so the text a person reads
 * and the rule the test applies cannot drift apart.
 *
 * An import counts whatever it brings: a value, a type only (`import type`, `typeof
 * import()`), a re-export (`export … from`) or a dynamic `import()`. A type-only import
 * still means the lower folder's words are defined above it, and a type cycle still means
 * two files can only be understood together.
 */
import { readdirSync, readFileSync } from "node:fs";
import { posix } from "node:path";
import ts from "typescript";

/** One import: the importing file and the imported one (both relative to the source root), and where. */
export interface ImportEdge {
  from: string;
  to: string;
  line: number;
}

/** The layers from the bottom: each a set of units (a folder `expr`, or a top-level file `cli.ts`). */
export type Layers = string[][];

/** The relative module specifiers a file's text imports, with their line (1-based). */
export function importsInText(text: string): { specifier: string; line: number }[] {
  const found = ts.preProcessFile(text, true, true).importedFiles;
  const lineOf = (pos: number) => text.slice(0, pos).split("\n").length;
  return found.map((f) => ({ specifier: f.fileName, line: lineOf(f.pos) }));
}

/** Every `.ts` file under `root`, relative to it, with `/` separators. */
export function sourceFiles(root: string, dir = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(posix.join(root, dir), { withFileTypes: true })) {
    const rel = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...sourceFiles(root, rel));
    else if (entry.name.endsWith(".ts")) out.push(rel);
  }
  return out.sort();
}

/**
 * The imports between the given files: relative specifiers resolved against the importing
 * file (`.js` read as the `.ts` it is compiled from). Package and `node:` imports are no
 * edge of this graph.
 */
export function importGraph(files: string[], read: (file: string) => string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of files) {
    for (const { specifier, line } of importsInText(read(from))) {
      if (!specifier.startsWith("./") && !specifier.startsWith("../")) continue;
      const to = posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/\.js$/, ".ts");
      edges.push({ from, to, line });
    }
  }
  return edges;
}

/**
 * The unit a file belongs to: the deepest unit the order names that holds it (a folder such
 * as `agents/openai`, or the file itself), else its top folder (or itself, at the top).
 */
export function unitOf(file: string, units: Iterable<string> = []): string {
  let best: string | undefined;
  for (const u of units) if ((file === u || file.startsWith(`${u}/`)) && (best === undefined || u.length > best.length)) best = u;
  if (best !== undefined) return best;
  const slash = file.indexOf("/");
  return slash < 0 ? file : file.slice(0, slash);
}

/**
 * The layers of a markdown document: the numbered items of its `## Layers` section, first
 * item at the bottom. An item names its units in backticks before its first colon: `expr/`
 * for a folder, `agents/openai/` for a folder inside one (its files leave the outer folder's
 * unit), `cli.ts` or `pipeline/spec.ts` for one file.
 */
export function parseLayers(markdown: string): Layers {
  const section = /^## Layers\b.*$([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(markdown)?.[1] ?? "";
  // an item runs on over its indented lines
  const items: string[] = [];
  for (const line of section.split("\n")) {
    const start = /^\d+\.\s+(.*)$/.exec(line);
    if (start) items.push(start[1]!);
    else if (/^\s+\S/.test(line) && items.length > 0) items[items.length - 1] += ` ${line.trim()}`;
    else if (line.trim() !== "" || items.length > 0) items.push("");
  }
  const layers: Layers = [];
  for (const item of items) {
    const head = item.split(/: |—/)[0]!;
    const units = [...head.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\/$/, ""));
    if (units.length > 0) layers.push(units);
  }
  return layers;
}

/**
 * The cycles of a graph: per strongly connected component, its files and a shortest way round
 * from its first file back to it (the first file repeated at the end).
 */
export function findCycles(nodes: string[], edges: { from: string; to: string }[]): { path: string[]; files: string[] }[] {
  const next = new Map<string, string[]>();
  for (const n of nodes) next.set(n, []);
  for (const e of edges) {
    if (!next.has(e.from)) next.set(e.from, []);
    if (!next.has(e.to)) next.set(e.to, []);
    next.get(e.from)!.push(e.to);
  }
  for (const targets of next.values()) targets.sort();
  // Tarjan's strongly connected components, iteratively (deep chains do not overflow the stack)
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  for (const start of [...next.keys()].sort()) {
    if (index.has(start)) continue;
    const work: { node: string; child: number }[] = [{ node: start, child: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1]!;
      const targets = next.get(top.node)!;
      if (top.child < targets.length) {
        const w = targets[top.child++]!;
        if (!index.has(w)) {
          index.set(w, counter);
          low.set(w, counter++);
          stack.push(w);
          onStack.add(w);
          work.push({ node: w, child: 0 });
        } else if (onStack.has(w)) low.set(top.node, Math.min(low.get(top.node)!, index.get(w)!));
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1]!.node;
        low.set(parent, Math.min(low.get(parent)!, low.get(top.node)!));
      }
      if (low.get(top.node) === index.get(top.node)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== top.node);
        if (component.length > 1 || next.get(top.node)!.includes(top.node)) components.push(component.sort());
      }
    }
  }
  return components.map((component) => ({ path: cyclePath(component, next), files: component }));
}

/** A shortest way from the component's first node back to itself, inside the component. */
function cyclePath(component: string[], next: Map<string, string[]>): string[] {
  const inside = new Set(component);
  const start = component[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const w of next.get(node)!) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at: string | undefined = node; at !== start && at !== undefined; at = cameFrom.get(at)) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, node);
        queue.push(w);
      }
    }
  }
  return [start, start];
}

/**
 * What breaks the layering, one sentence each: a unit no layer names, an import that climbs
 * to a higher layer or reaches across to another unit of its own layer, and each import
 * cycle with its path. `root` prefixes the paths in the sentences.
 */
export function layeringProblems(files: string[], edges: ImportEdge[], layers: Layers, root = "src/"): string[] {
  const problems: string[] = [];
  const rank = new Map<string, number>();
  layers.forEach((units, i) => units.forEach((u) => rank.set(u, i + 1)));
  const name = (u: string) => (u.endsWith(".ts") ? `${root}${u}` : `${root}${u}/`);
  const unit = (f: string) => unitOf(f, rank.keys());
  for (const u of [...new Set(files.map(unit))].sort()) {
    if (!rank.has(u)) problems.push(`${name(u)} is in no layer of the documented order`);
  }
  for (const e of edges) {
    const a = unit(e.from);
    const b = unit(e.to);
    if (a === b) continue;
    const ra = rank.get(a);
    const rb = rank.get(b);
    if (ra === undefined || rb === undefined || rb < ra) continue;
    const where = `${root}${e.from}:${e.line} imports ${root}${e.to}`;
    if (rb === ra) problems.push(`${where}: ${name(a)} and ${name(b)} share layer ${ra}, and neither may import the other`);
    else problems.push(`${where}: ${name(a)} (layer ${ra}) climbs to ${name(b)} (layer ${rb})`);
  }
  for (const { path, files: knot } of findCycles(files, edges)) {
    const rest = knot.length > path.length - 1 ? ` (one way round a knot of ${knot.length} files: ${knot.map((f) => root + f).join(", ")})` : "";
    problems.push(`import cycle: ${path.map((f) => root + f).join(" → ")}${rest}`);
  }
  return problems;
}

/** The problems of a source tree against the order a markdown file documents. */
export function checkTree(sourceRoot: string, documentPath: string): { problems: string[]; layers: Layers; edges: ImportEdge[] } {
  const files = sourceFiles(sourceRoot);
  const edges = importGraph(files, (f) => readFileSync(posix.join(sourceRoot, f), "utf8"));
  const layers = parseLayers(readFileSync(documentPath, "utf8"));
  const root = sourceRoot.endsWith("/") ? sourceRoot : `${sourceRoot}/`;
  return { problems: layeringProblems(files, edges, layers, root), layers, edges };
}
