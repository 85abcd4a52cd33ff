import { isAlias, isMap, isPair, isScalar, isSeq, parseAllDocuments, type Document, type Node as YamlNode, type Pair, type YAMLMap } from "yaml";
import type { Diagnostic } from "../diagnostics/diagnostic.ts";

export interface ParsedText {
  /** The YAML document, with node ranges (offsets into the text). */
  document?: Document.Parsed;
  /** The plain JS value (undefined when the text does not parse). */
  value: unknown;
  diagnostics: Diagnostic[];
}

/**
 * Parse pipeline YAML: every syntax error and duplicate key becomes a located
 * diagnostic; nothing throws.
 */
export function parsePipelineText(text: string, file: string): ParsedText {
  const diagnostics: Diagnostic[] = [];
  let docs: Document.Parsed[];
  try {
    // yaml's own duplicate-key check compares each key with every key before it (quadratic in
    // a mapping's size); duplicateKeys below does the same check with one set per mapping
    docs = parseAllDocuments(text, { uniqueKeys: false, prettyErrors: false, strict: true }) as Document.Parsed[];
  } catch (error) {
    return { value: undefined, diagnostics: [{ code: "YAML_SYNTAX", severity: "error", message: `the file is not valid YAML: ${String(error)}`, file, start: 0, end: 0 }] };
  }
  if (!Array.isArray(docs)) docs = [];
  const clamp = (n: number) => Math.max(0, Math.min(n, text.length));
  for (const doc of docs) {
    const errors = [...doc.errors, ...duplicateKeys(doc)].sort((a, b) => a.pos[0] - b.pos[0]);
    for (const e of errors) {
      const [s, en] = e.pos;
      const duplicate = e.code === "DUPLICATE_KEY";
      diagnostics.push({
        code: duplicate ? "YAML_DUPLICATE_KEY" : "YAML_SYNTAX",
        severity: "error",
        message: duplicate ? duplicateMessage(text, s, en) : yamlMessage(e.message),
        file,
        start: clamp(s),
        end: clamp(Math.max(s, en)),
        hint: duplicate ? "each key may appear once in a mapping; merge the two entries" : undefined,
      });
    }
  }
  if (docs.length > 1) {
    const second = docs[1]!;
    const start = clamp(second.range?.[0] ?? 0);
    diagnostics.push({ code: "YAML_SYNTAX", severity: "error", message: "a pipeline file holds one YAML document; found more than one", file, start, end: start, hint: "remove the \"---\" separator and the second document" });
  }
  const document = docs[0];
  if (!document || document.contents === null || document.contents === undefined) {
    if (diagnostics.length === 0) diagnostics.push({ code: "SCHEMA_TYPE", severity: "error", message: "the file is empty; a pipeline is a mapping with phaseloop, name, phases and stop", file, start: 0, end: 0 });
    return { document, value: undefined, diagnostics };
  }
  if (diagnostics.some((d) => d.severity === "error")) return { document, value: undefined, diagnostics };
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 100 });
    JSON.stringify(value); // a recursive alias makes a value with a cycle
  } catch (error) {
    const message = /circular/i.test(String((error as Error).message)) ? "an alias refers to a node that contains it (a recursive alias)" : (error as Error).message;
    diagnostics.push({ code: "YAML_SYNTAX", severity: "error", message: `the document cannot be read: ${message}`, file, start: 0, end: 0, hint: "write the value out instead of the alias" });
  }
  return { document, value, diagnostics };
}

/** Every key of a mapping that an earlier key of the same mapping equals (scalars compared by value), in linear time. */
function duplicateKeys(doc: Document.Parsed): { code: string; message: string; pos: [number, number] }[] {
  const out: { code: string; message: string; pos: [number, number] }[] = [];
  const stack: unknown[] = [doc.contents];
  while (stack.length > 0) {
    const node = stack.pop();
    if (isMap(node)) {
      const seen = new Set<unknown>();
      for (const pair of node.items) {
        const key = pair.key;
        if (isScalar(key)) {
          const id = typeof key.value === "object" && key.value !== null ? key : `${typeof key.value}:${String(key.value)}`;
          if (seen.has(id)) {
            const at = key.range?.[0] ?? 0;
            out.push({ code: "DUPLICATE_KEY", message: "Map keys must be unique", pos: [at, at + 1] });
          }
          seen.add(id);
        } else if (key && !isAlias(key)) {
          stack.push(key);
        }
        if (pair.value && !isAlias(pair.value)) stack.push(pair.value);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) if (item && !isAlias(item)) stack.push(item);
    }
  }
  return out;
}

function yamlMessage(message: string): string {
  const first = message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "").replace(/\.$/, "");
  return first.charAt(0).toLowerCase() + first.slice(1);
}

function duplicateMessage(text: string, start: number, _end: number): string {
  const key = /^(?:"[^"]*"|'[^']*'|[^:\s]+)/.exec(text.slice(start))?.[0]?.replace(/^["']|["']$/g, "") ?? "";
  return key ? `duplicate key "${key.replace(/:$/, "")}"` : "duplicate key";
}

/** The node at a JSON pointer, with the pair holding it (for key spans). */
export function nodeAtPointer(document: Document.Parsed | undefined, pointer: string): { node?: YamlNode; pair?: Pair } {
  if (!document) return {};
  const path = pointer === "" ? [] : pointer.slice(1).split("/").map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  let node: unknown = document.contents;
  let pair: Pair | undefined;
  for (const seg of path) {
    if (isMap(node)) {
      const found = pairIndex(node).get(seg);
      if (!found) return { node: node as YamlNode, pair };
      pair = found as Pair;
      node = found.value;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (item === undefined) return { node: node as YamlNode, pair };
      pair = undefined;
      node = item;
    } else {
      return { node: node as YamlNode, pair };
    }
  }
  return { node: (node ?? undefined) as YamlNode | undefined, pair };
}

const pairIndexes = new WeakMap<YAMLMap, { size: number; index: Map<string, Pair> }>();

/** A mapping's pairs by key text (the first of equal keys), built once: one lookup per pointer segment, not a scan. */
function pairIndex(map: YAMLMap): Map<string, Pair> {
  const cached = pairIndexes.get(map);
  if (cached && cached.size === map.items.length) return cached.index; // a mapping edited since is indexed again
  const index = new Map<string, Pair>();
  for (const p of map.items) {
    const k = isPair(p) ? keyText(p.key) : undefined;
    if (k !== undefined && !index.has(k)) index.set(k, p as Pair);
  }
  pairIndexes.set(map, { size: map.items.length, index });
  return index;
}

function keyText(key: unknown): string | undefined {
  return isScalar(key) ? String(key.value) : undefined;
}

/** Character range of the value (or the key) at a pointer; the closest existing ancestor when it is missing. */
export function spanOfPointer(document: Document.Parsed | undefined, text: string, pointer: string, mode: "value" | "key" = "value"): { start: number; end: number } {
  const { node, pair } = nodeAtPointer(document, pointer);
  if (mode === "key" && pair && isScalar(pair.key) && pair.key.range) return { start: pair.key.range[0], end: pair.key.range[1] };
  if (node && (node as { range?: [number, number, number] }).range) {
    const [s, e] = (node as { range: [number, number, number] }).range;
    if (isMap(node) || isSeq(node)) {
      // a whole mapping: point at its first line, not the whole block
      const nl = text.indexOf("\n", s);
      return { start: s, end: Math.min(e, nl < 0 ? text.length : nl) };
    }
    return { start: s, end: e };
  }
  if (pair && isScalar(pair.key) && pair.key.range) return { start: pair.key.range[0], end: pair.key.range[1] };
  return { start: 0, end: 0 };
}

/** A key's span when the pointer names a key inside a mapping. */
export function keySpan(document: Document.Parsed | undefined, parentPointer: string, key: string): { start: number; end: number } | undefined {
  const { node } = nodeAtPointer(document, parentPointer);
  if (!isMap(node)) return undefined;
  const p = pairIndex(node).get(key);
  if (p && isScalar(p.key) && p.key.range) return { start: p.key.range[0], end: p.key.range[1] };
  return undefined;
}

/**
 * The offset in the file where the string VALUE of a scalar begins, for mapping
 * offsets inside an expression to the file: exact for plain scalars and quoted
 * scalars without escapes, per line for block scalars; undefined when not exact.
 */
export function valueOffsetMapper(text: string, node: YamlNode | undefined): ((offset: number) => number) | undefined {
  if (!isScalar(node) || !node.range || typeof node.value !== "string") return undefined;
  const [start, end] = node.range;
  const raw = text.slice(start, end);
  const value = node.value;
  if (node.type === "PLAIN") return raw.startsWith(value) ? (o) => start + o : undefined;
  if (node.type === "QUOTE_SINGLE" || node.type === "QUOTE_DOUBLE") {
    return raw.slice(1, 1 + value.length) === value ? (o) => start + 1 + o : undefined;
  }
  if (node.type === "BLOCK_LITERAL" || node.type === "BLOCK_FOLDED") {
    // map each value line to where it appears in the raw block
    const valueLines = value.split("\n");
    const starts: number[] = [];
    let search = raw.indexOf("\n") + 1;
    let acc = 0;
    const map: { valueStart: number; fileStart: number }[] = [];
    for (const line of valueLines) {
      if (line === "") {
        acc += 1;
        continue;
      }
      const at = raw.indexOf(line, search);
      if (at < 0) return undefined;
      map.push({ valueStart: acc, fileStart: start + at });
      starts.push(at);
      search = at + line.length;
      acc += line.length + 1;
    }
    return (o) => {
      let best = map[0];
      for (const m of map) if (m.valueStart <= o) best = m;
      return best ? best.fileStart + (o - best.valueStart) : start;
    };
  }
  return undefined;
}
