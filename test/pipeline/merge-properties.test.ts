import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Document, isMap, type YAMLMap } from "yaml";
import { mergeMaps } from "../../src/pipeline/merge-pipelines.ts";

type Tree = { [k: string]: Tree | string | number | boolean | null | (string | number)[] };

const key = fc.constantFrom("a", "b", "c", "d", "e");
const leaf = fc.oneof(fc.string({ maxLength: 3 }), fc.integer(), fc.boolean(), fc.array(fc.oneof(fc.string({ maxLength: 2 }), fc.integer()), { maxLength: 3 }));
const tree: fc.Arbitrary<Tree> = fc.letrec<{ t: Tree; v: Tree[string] }>((tie) => ({
  t: fc.dictionary(key, tie("v"), { maxKeys: 4 }) as fc.Arbitrary<Tree>,
  v: fc.oneof({ depthSize: "small" }, leaf, fc.constant(null), tie("t")) as fc.Arbitrary<Tree[string]>,
})).t;
/** A base as written in a file: no nulls (a base that is not extending anything keeps its values). */
const base = tree.map(function strip(t: Tree): Tree {
  const out: Tree = {};
  for (const [k, v] of Object.entries(t)) if (v !== null) out[k] = v && typeof v === "object" && !Array.isArray(v) ? strip(v) : v;
  return out;
});

const node = (v: Tree): YAMLMap => {
  const m = new Document(v).contents;
  if (!isMap(m)) throw new Error("not a map");
  return m;
};
const merge = (b: Tree, o: Tree): Tree => new Document().createNode(null) && (toJS(mergeMaps(node(b), node(o))) as Tree);
const toJS = (m: YAMLMap): unknown => {
  const d = new Document();
  d.contents = m as never;
  return d.toJS();
};
const isTree = (v: unknown): v is Tree => !!v && typeof v === "object" && !Array.isArray(v);

describe("merge rules", () => {
  it("the extending side wins for every key it sets to a value that is not a map", () => {
    fc.assert(
      fc.property(base, tree, (b, o) => {
        const m = merge(b, o);
        for (const [k, v] of Object.entries(o)) {
          if (v === null) expect(k in m).toBe(false);
          else if (!(isTree(v) && isTree(b[k]))) expect(m[k]).toEqual(v);
        }
      }),
    );
  });

  it("keys only the base has are kept as they are", () => {
    fc.assert(
      fc.property(base, tree, (b, o) => {
        const m = merge(b, o);
        for (const [k, v] of Object.entries(b)) if (!(k in o)) expect(m[k]).toEqual(v);
      }),
    );
  });

  it("maps on both sides merge recursively, lists are replaced whole", () => {
    fc.assert(
      fc.property(base, tree, (b, o) => {
        const m = merge(b, o);
        for (const [k, v] of Object.entries(o)) {
          if (isTree(v) && isTree(b[k])) expect(m[k]).toEqual(merge(b[k] as Tree, v));
          if (Array.isArray(v)) expect(m[k]).toEqual(v);
        }
      }),
    );
  });

  it("the base's key order comes first, then the extending side's new keys", () => {
    fc.assert(
      fc.property(base, tree, (b, o) => {
        const keys = Object.keys(merge(b, o));
        const expected = [...Object.keys(b).filter((k) => o[k] !== null), ...Object.keys(o).filter((k) => !(k in b) && o[k] !== null)];
        expect(keys).toEqual(expected);
      }),
    );
  });

  it("extending with nothing changes nothing; extending nothing gives the extending side without its nulls", () => {
    fc.assert(
      fc.property(base, (b) => {
        expect(merge(b, {})).toEqual(b);
        expect(merge({}, b)).toEqual(b);
      }),
    );
  });

  it("merging does not change either input", () => {
    fc.assert(
      fc.property(base, tree, (b, o) => {
        const bn = node(b);
        const on = node(o);
        mergeMaps(bn, on);
        expect(toJS(bn)).toEqual(b);
        expect(toJS(on)).toEqual(o);
      }),
    );
  });
});
