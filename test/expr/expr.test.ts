import { spawnSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkExpression,
  collectReferences,
  evaluateExpression,
  parseExpression,
  parseTemplate,
  renderTemplate,
  shellQuote,
  type Scope,
} from "../../src/expr/index.ts";
import type { JsonValue } from "../../src/pipeline/spec.ts";

const ev = (src: string, ctx: Record<string, JsonValue> = {}) => {
  const p = parseExpression(src);
  expect(p.diagnostics).toEqual([]);
  return evaluateExpression(p.expr!, ctx);
};
const value = (src: string, ctx: Record<string, JsonValue> = {}) => {
  const r = ev(src, ctx);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

describe("parsing", () => {
  it("respects precedence and associativity", () => {
    expect(value("1 + 2 * 3")).toBe(7);
    expect(value("(1 + 2) * 3")).toBe(9);
    expect(value("10 - 4 - 3")).toBe(3);
    expect(value("!false && 1 < 2 || false")).toBe(true);
    expect(value("true ? 'a' : 'b'")).toBe("a");
  });
  it("locates syntax errors inside the expression", () => {
    expect(parseExpression("exit_code = 0").diagnostics[0]).toMatchObject({ code: "EXPR_SYNTAX", start: 10, end: 11, hint: 'did you mean "=="?' });
    expect(parseExpression("len(a").diagnostics[0]).toMatchObject({ code: "EXPR_SYNTAX", start: 5 });
    expect(parseExpression("'open").diagnostics[0]).toMatchObject({ code: "EXPR_SYNTAX", start: 0 });
    expect(parseExpression("a b").diagnostics[0]).toMatchObject({ start: 2, end: 3 });
    expect(parseExpression("1 < 2 < 3").diagnostics[0]?.message).toMatch(/chained/);
  });
  it("refuses deep nesting without overflowing the stack", () => {
    const deep = "(".repeat(5000) + "1" + ")".repeat(5000);
    expect(parseExpression(deep).diagnostics[0]?.message).toMatch(/nested too deeply/);
  });
});

describe("evaluation", () => {
  const ctx = { output: { status: "COMPLETE", pending: [], review: { blocker: "" } }, n: 3, list: [1, 2], s: "hello" };
  it("has null-safe member access", () => {
    expect(value("output.missing.deeper", ctx)).toBe(null);
    expect(value("output.review.blocker != ''", ctx)).toBe(false);
    expect(value("nothing == null", ctx)).toBe(true);
  });
  it("compares JSON values deeply and without coercion", () => {
    expect(value("[1, 2] == list", ctx)).toBe(true);
    expect(value("'3' == n", ctx)).toBe(false);
    expect(value("2 in list && 'ell' in s && 'status' in output", ctx)).toBe(true);
  });
  it("returns type errors as values, never throwing", () => {
    const r = ev("s < 1", ctx);
    expect(r.ok).toBe(false);
    expect(ev("1 / 0").ok).toBe(false);
    expect(ev("len(5)").ok).toBe(false);
    expect(ev("matches(s, '(')").ok).toBe(false);
  });
  it("has the documented functions", () => {
    expect(value("len(output.pending) == 0", ctx)).toBe(true);
    expect(value("contains(s, 'll') && starts_with(s, 'he') && ends_with(s, 'lo')", ctx)).toBe(true);
    expect(value("matches('STATUS: OK', '^STATUS: (OK|DONE)$')")).toBe(true);
    expect(value("default(nothing, 'REJECT')")).toBe("REJECT");
    expect(value("int('42') + number('0.5')")).toBe(42.5);
    expect(value("join(split('a,b', ','), '+')")).toBe("a+b");
    expect(value("tail('1\\n2\\n3', 2)")).toBe("2\n3");
    expect(value("upper(lower('AbC')) + trim('  x ')")).toBe("ABCx");
    expect(value("json('{\"a\":[1]}').a[0]")).toBe(1);
    expect(value("first([]) == null && last([1,2]) == 2 && min(3, 4) == 3 && max([1, 9]) == 9")).toBe(true);
  });
  it("uses truthiness for && || ! : null, false, 0, '', [] and {} are false", () => {
    for (const falsy of ["null", "false", "0", "''", "[]", "output.pending"]) expect(value(`!${falsy}`, ctx)).toBe(true);
  });
});

describe("checking", () => {
  const scope: Scope = {
    iteration: { kind: "number" },
    params: { kind: "object", fields: { file: { kind: "string" } }, unknownCode: "EXPR_UNKNOWN_PARAM", what: "param" },
    phases: { kind: "object", fields: { review: { kind: "object", fields: { exit_code: { kind: "any" } } } }, unknownCode: "EXPR_UNKNOWN_PHASE", what: "phase" },
  };
  const check = (src: string) => checkExpression(parseExpression(src).expr!, scope);
  it("reports unknown phases, params and names with a did-you-mean hint and span", () => {
    expect(check("phases.reveiw.exit_code == 0")[0]).toMatchObject({ code: "EXPR_UNKNOWN_PHASE", start: 7, end: 13, hint: 'did you mean "review"?' });
    expect(check("params.fiel")[0]).toMatchObject({ code: "EXPR_UNKNOWN_PARAM", hint: 'did you mean "file"?' });
    expect(check("iterations > 1")[0]).toMatchObject({ code: "EXPR_UNKNOWN_NAME", hint: 'did you mean "iteration"?' });
  });
  it("reports unknown functions, arity and obvious type errors", () => {
    expect(check("length(params.file)")[0]).toMatchObject({ code: "EXPR_UNKNOWN_FUNCTION", hint: 'did you mean "len"?' });
    expect(check("contains(params.file)")[0]?.code).toBe("EXPR_ARITY");
    expect(check("len(5)")[0]?.code).toBe("EXPR_TYPE");
    expect(check("params.file < 1")[0]?.code).toBe("EXPR_TYPE");
  });
  it("collects the references an expression makes", () => {
    const refs = collectReferences(parseExpression("params.file == phases['review'].exit_code").expr!).map((r) => r.path);
    expect(refs).toEqual([["params", "file"], ["phases", "review", "exit_code"]]);
  });
});

describe("templates", () => {
  it("renders parts, escapes and values as text", () => {
    const t = parseTemplate("a {{ x }} \\{{ literal }} {{ list }} {{ nothing }}.").template!;
    const r = renderTemplate(t, { x: 1, list: [1, "b"] });
    expect(r).toEqual({ ok: true, value: 'a 1 {{ literal }} [1,"b"] .' });
  });
  it("reports an unclosed part with its place", () => {
    expect(parseTemplate("echo {{ x").diagnostics[0]).toMatchObject({ code: "TEMPLATE_SYNTAX", start: 5 });
    expect(parseTemplate("echo {{ x + }}").diagnostics[0]).toMatchObject({ code: "EXPR_SYNTAX", start: 12 });
  });
  it("quotes each interpolated value when asked", () => {
    const t = parseTemplate("cat {{ f }}").template!;
    expect(renderTemplate(t, { f: "a b; rm -rf /" }, { quote: shellQuote })).toEqual({ ok: true, value: "cat 'a b; rm -rf /'" });
  });
});

describe("properties", () => {
  it("parsing never throws and every span lies inside the source", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.string({ unit: fc.constantFrom("(", ")", "[", "]", "'", '"', "=", "!", "<", "&", "|", ".", "a", "1", " ", "?", ":", ",", "\\") })), (src) => {
        for (const d of parseExpression(src).diagnostics) {
          expect(d.start).toBeGreaterThanOrEqual(0);
          expect(d.end).toBeGreaterThanOrEqual(d.start);
          expect(d.end).toBeLessThanOrEqual(src.length);
        }
        for (const d of parseTemplate(src).diagnostics) expect(d.end).toBeLessThanOrEqual(src.length);
      }),
      { numRuns: 2000 },
    );
  });

  const json: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue>;
  const { expr } = fc.letrec((tie) => ({
    expr: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constantFrom("a", "b", "a.x", "b[0]", "1", "'s'", "null", "true", "[1, 2]"),
      fc.tuple(tie("expr"), fc.constantFrom("==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/", "%", "in"), tie("expr")).map(([l, op, r]) => `(${l} ${op} ${r})`),
      fc.tuple(fc.constantFrom("!", "-"), tie("expr")).map(([op, e]) => `${op}(${e})`),
      fc.tuple(fc.constantFrom("len", "contains", "default", "string", "int", "first", "keys", "join"), fc.array(tie("expr"), { minLength: 1, maxLength: 2 })).map(([f, args]) => `${f}(${args.join(", ")})`),
      fc.tuple(tie("expr"), tie("expr"), tie("expr")).map(([c, t, e]) => `(${c} ? ${t} : ${e})`),
    ),
  }));

  it("evaluation of well-formed expressions never throws, is deterministic and leaves the context alone", () => {
    fc.assert(
      fc.property(expr as fc.Arbitrary<string>, json, json, (src, a, b) => {
        const p = parseExpression(src);
        expect(p.diagnostics).toEqual([]);
        // values as they arrive from JSON (fast-check's -0 is no JSON value: it reads back as 0)
        const ctx = JSON.parse(JSON.stringify({ a, b })) as Record<string, never>;
        const before = JSON.stringify(ctx);
        const r1 = evaluateExpression(p.expr!, ctx);
        const r2 = evaluateExpression(JSON.parse(JSON.stringify(p.expr)), JSON.parse(before));
        expect(r1).toEqual(r2);
        expect(JSON.stringify(ctx)).toBe(before);
      }),
      { numRuns: 1000 },
    );
  });

  it("shell quoting survives a round trip through sh for any text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 30 }).filter((s) => !s.includes("\0")), (s) => {
        const r = spawnSync("sh", ["-c", `printf %s ${shellQuote(s)}`], { encoding: "utf8" });
        expect(r.stdout).toBe(s);
      }),
      { numRuns: 60 },
    );
  });
});
