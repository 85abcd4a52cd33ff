/**
 * The merge rules of `extends:` and `include:`, on YAML nodes so that every
 * value keeps the place it was written: maps merge key by key and the
 * extending side wins; lists and scalars are replaced whole; a null value
 * removes the key. Key order is the base's, then the extending side's new keys.
 * One exception: an agent or MCP server of another kind (see KIND_KEYS) replaces
 * the base's whole.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, Pair, visit, YAMLMap, type Document, type Node as YamlNode } from "yaml";

/** A mapping key as text (undefined for a key that is not a scalar). */
export function keyOf(pair: unknown): string | undefined {
  if (!isPair(pair)) return undefined;
  const k = pair.key;
  if (isScalar(k)) return String(k.value);
  if (typeof k === "string" || typeof k === "number") return String(k);
  return undefined;
}

/** Whether a value is YAML null (`~`, `null`, or nothing after the colon). */
export function isNullNode(node: unknown): boolean {
  return node === null || node === undefined || (isScalar(node) && node.value === null);
}

/**
 * Keys that say what kind of thing an entry is, one of each group per entry: an agent runs a
 * `preset` or a `command`; an MCP server is started (`command`) or reached (`url`). An
 * override of another kind replaces the base's entry whole: merged key by key, the base's
 * `command` would stay beside the override's `preset` and win, silently.
 */
const KIND_KEYS: Record<string, readonly string[]> = { agents: ["preset", "command"], mcp: ["command", "url"] };

function kindOf(map: YAMLMap, keys: readonly string[]): string | undefined {
  for (const p of map.items) {
    const k = keyOf(p);
    if (k !== undefined && keys.includes(k) && !isNullNode((p as Pair).value)) return k;
  }
  return undefined;
}

/** Whether an entry of `over` is of another kind than the base's, and so replaces it whole. */
function replacesWhole(path: readonly string[], base: YAMLMap, over: YAMLMap): boolean {
  const keys = path.length === 1 ? KIND_KEYS[path[0]!] : undefined;
  if (!keys) return false;
  const was = kindOf(base, keys);
  const is = kindOf(over, keys);
  return was !== undefined && is !== undefined && was !== is;
}

/** Merge `over` onto `base`, returning a new map; neither input changes. `path` is where the maps stand in the document. */
export function mergeMaps(base: YAMLMap, over: YAMLMap, path: readonly string[] = []): YAMLMap {
  const out = new YAMLMap();
  out.range = base.range ?? over.range;
  out.flow = base.flow;
  const overByKey = new Map<string, Pair>();
  for (const p of over.items) {
    const k = keyOf(p);
    if (k !== undefined) overByKey.set(k, p as Pair);
  }
  const baseKeys = new Set<string>();
  for (const bp of base.items) {
    const k = keyOf(bp);
    if (k === undefined || !overByKey.has(k)) {
      out.items.push(bp);
      continue;
    }
    baseKeys.add(k);
    const op = overByKey.get(k)!;
    if (isNullNode(op.value)) continue;
    if (isMap(bp.value) && isMap(op.value)) {
      // replaced whole, its null keys still remove (nothing): `command: null` beside a `preset`
      const from = replacesWhole(path, bp.value, op.value) ? new YAMLMap() : bp.value;
      out.items.push(new Pair(bp.key, mergeMaps(from, op.value, [...path, k])));
    } else out.items.push(op);
  }
  for (const op of over.items) {
    const k = keyOf(op);
    if (k !== undefined && baseKeys.has(k)) continue;
    if (isNullNode((op as Pair).value)) continue;
    out.items.push(op as Pair);
  }
  return out;
}

/** The same map without the pairs whose key is in `drop`. */
export function withoutKeys(map: YAMLMap, drop: Iterable<string>): YAMLMap {
  const set = new Set(drop);
  const out = new YAMLMap();
  out.range = map.range;
  out.flow = map.flow;
  out.items = map.items.filter((p) => !set.has(keyOf(p) ?? "\0"));
  return out;
}

/** The pair under `key` in a map node. */
export function pairOf(map: unknown, key: string): Pair | undefined {
  if (!isMap(map)) return undefined;
  return map.items.find((p) => keyOf(p) === key) as Pair | undefined;
}

/**
 * Make a parsed document's nodes stand at `offset` in a longer text (the
 * files of a chain, one after the other), and write its aliases out so that
 * no node refers to an anchor of another file.
 */
export function relocateDocument(document: Document.Parsed, offset: number): void {
  if (hasAlias(document)) {
    visit(document, {
      Alias(_key, node) {
        const target = node.resolve(document);
        return target ? (target.clone() as YamlNode) : undefined;
      },
    });
  }
  const seen = new Set<unknown>();
  const shift = (node: unknown): void => {
    if (!node || typeof node !== "object" || seen.has(node)) return;
    seen.add(node);
    const ranged = node as { range?: [number, number, number] | null };
    if (ranged.range) ranged.range = [ranged.range[0] + offset, ranged.range[1] + offset, ranged.range[2] + offset];
    if (isMap(node) || isSeq(node)) for (const item of node.items) shift(item);
    else if (isPair(node)) {
      shift(node.key);
      shift(node.value);
    }
  };
  shift(document.contents);
}

function hasAlias(document: Document.Parsed): boolean {
  let found = false;
  visit(document, {
    Alias() {
      found = true;
      return visit.BREAK;
    },
  });
  return found;
}

/** Every string scalar value (not keys) under a node, for rewriting. */
export function eachStringScalar(node: unknown, fn: (scalar: { value: unknown }, path: string[]) => void, path: string[] = []): void {
  if (isScalar(node)) {
    if (typeof node.value === "string") fn(node, path);
  } else if (isMap(node)) {
    for (const p of node.items) eachStringScalar(p.value, fn, [...path, keyOf(p) ?? ""]);
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => eachStringScalar(item, fn, [...path, String(i)]));
  } else if (isAlias(node)) {
    // written out by relocateDocument
  }
}
