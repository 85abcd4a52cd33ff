import type { BinaryOp, Expr } from "./ast.ts";
import type { ExprDiagnostic } from "./diagnostic.ts";
import { tokenize, type Token } from "./lexer.ts";

const MAX_DEPTH = 64;

const BINARY: Record<string, { prec: number; op: BinaryOp }> = {
  "||": { prec: 1, op: "||" },
  "&&": { prec: 2, op: "&&" },
  "==": { prec: 3, op: "==" },
  "!=": { prec: 3, op: "!=" },
  "<": { prec: 4, op: "<" },
  "<=": { prec: 4, op: "<=" },
  ">": { prec: 4, op: ">" },
  ">=": { prec: 4, op: ">=" },
  in: { prec: 4, op: "in" },
  "+": { prec: 5, op: "+" },
  "-": { prec: 5, op: "-" },
  "*": { prec: 6, op: "*" },
  "/": { prec: 6, op: "/" },
  "%": { prec: 6, op: "%" },
};

class ParseError extends Error {
  readonly diagnostic: ExprDiagnostic;
  constructor(diagnostic: ExprDiagnostic) {
    super(diagnostic.message);
    this.diagnostic = diagnostic;
  }
}

/** Parse an expression. Never throws; problems come back as EXPR_SYNTAX diagnostics. */
export function parseExpression(source: string): { expr: Expr | undefined; diagnostics: ExprDiagnostic[] } {
  const { tokens, diagnostics } = tokenize(source);
  if (diagnostics.length > 0) return { expr: undefined, diagnostics };
  if (tokens.length === 1) return { expr: undefined, diagnostics: [{ code: "EXPR_SYNTAX", message: "empty expression", start: 0, end: source.length }] };
  let pos = 0;
  let depth = 0;
  const peek = (): Token => tokens[pos]!;
  const next = (): Token => tokens[Math.min(pos++, tokens.length - 1)]!;
  const fail = (message: string, token: Token, hint?: string): never => {
    throw new ParseError({ code: "EXPR_SYNTAX", message, start: token.start, end: Math.max(token.end, token.start), hint });
  };
  const describe = (t: Token) => (t.kind === "eof" ? "end of expression" : `"${t.text}"`);
  const expectOp = (text: string, context: string) => {
    const t = peek();
    if (t.kind === "op" && t.text === text) return next();
    return fail(`expected "${text}" ${context}, found ${describe(t)}`, t);
  };

  const enter = (t: Token) => {
    if (++depth > MAX_DEPTH) fail("expression is nested too deeply", t);
  };

  const parseConditional = (): Expr => {
    enter(peek());
    const test = parseBinary(1);
    const q = peek();
    if (q.kind === "op" && q.text === "?") {
      next();
      const then = parseConditional();
      expectOp(":", "in a conditional (a ? b : c)");
      const otherwise = parseConditional();
      depth--;
      return { kind: "conditional", test, then, else: otherwise, start: test.start, end: otherwise.end };
    }
    depth--;
    return test;
  };

  const parseBinary = (minPrec: number): Expr => {
    let left = parseUnary();
    for (;;) {
      const t = peek();
      const key = t.kind === "op" || (t.kind === "ident" && t.text === "in") ? t.text : "";
      const info = BINARY[key];
      if (!info || info.prec < minPrec) return left;
      next();
      // comparison operators do not chain: a < b < c is a mistake
      const right = parseBinary(info.prec + 1);
      left = { kind: "binary", op: info.op, left, right, start: left.start, end: right.end, opStart: t.start };
      if (info.prec === 3 || info.prec === 4) {
        const after = peek();
        const nextInfo = BINARY[after.kind === "op" || after.text === "in" ? after.text : ""];
        if (nextInfo && nextInfo.prec === info.prec) fail(`comparisons cannot be chained; use && between them`, after);
      }
    }
  };

  const parseUnary = (): Expr => {
    const t = peek();
    if (t.kind === "op" && (t.text === "!" || t.text === "-")) {
      next();
      enter(t);
      const operand = parseUnary();
      depth--;
      return { kind: "unary", op: t.text as "!" | "-", operand, start: t.start, end: operand.end };
    }
    return parsePostfix(parsePrimary());
  };

  const parsePostfix = (expr: Expr): Expr => {
    for (;;) {
      const t = peek();
      if (t.kind === "op" && t.text === ".") {
        next();
        const name = peek();
        if (name.kind !== "ident") fail(`expected a name after ".", found ${describe(name)}`, name);
        next();
        expr = { kind: "member", object: expr, property: name.text, start: expr.start, end: name.end, propStart: name.start };
      } else if (t.kind === "op" && t.text === "[") {
        next();
        enter(t);
        const index = parseConditional();
        depth--;
        const close = expectOp("]", "after the index");
        expr = { kind: "index", object: expr, index, start: expr.start, end: close.end };
      } else return expr;
    }
  };

  const parsePrimary = (): Expr => {
    const t = next();
    switch (t.kind) {
      case "number":
        return { kind: "literal", value: t.value as number, start: t.start, end: t.end };
      case "string":
        return { kind: "literal", value: t.value as string, start: t.start, end: t.end };
      case "ident": {
        if (t.text === "true" || t.text === "false") return { kind: "literal", value: t.text === "true", start: t.start, end: t.end };
        if (t.text === "null") return { kind: "literal", value: null, start: t.start, end: t.end };
        const open = peek();
        if (open.kind === "op" && open.text === "(") {
          next();
          enter(open);
          const args: Expr[] = [];
          if (!(peek().kind === "op" && peek().text === ")")) {
            for (;;) {
              args.push(parseConditional());
              const sep = peek();
              if (sep.kind === "op" && sep.text === ",") {
                next();
                continue;
              }
              break;
            }
          }
          depth--;
          const close = expectOp(")", "after the arguments");
          return { kind: "call", callee: t.text, args, start: t.start, end: close.end, calleeEnd: t.end };
        }
        return { kind: "ident", name: t.text, start: t.start, end: t.end };
      }
      case "op":
        if (t.text === "(") {
          enter(t);
          const inner = parseConditional();
          depth--;
          expectOp(")", "to close the parenthesis");
          return inner;
        }
        if (t.text === "[") {
          enter(t);
          const items: Expr[] = [];
          if (!(peek().kind === "op" && peek().text === "]")) {
            for (;;) {
              items.push(parseConditional());
              const sep = peek();
              if (sep.kind === "op" && sep.text === ",") {
                next();
                continue;
              }
              break;
            }
          }
          depth--;
          const close = expectOp("]", "to close the list");
          return { kind: "array", items, start: t.start, end: close.end };
        }
        return fail(`unexpected ${describe(t)}`, t, t.text === ")" ? "remove it, or open a parenthesis before it" : undefined);
      default:
        return fail(`unexpected ${describe(t)}: an operand is missing`, t);
    }
  };

  try {
    const expr = parseConditional();
    const rest = peek();
    if (rest.kind !== "eof") {
      fail(`unexpected ${describe(rest)} after a complete expression`, rest, rest.kind === "ident" || rest.kind === "string" || rest.kind === "number" ? "join the parts with an operator such as && or ==" : undefined);
    }
    const deep = tooDeep(expr);
    if (deep) return { expr: undefined, diagnostics: [{ code: "EXPR_SYNTAX", message: `expression is nested too deeply (more than ${MAX_TREE_DEPTH} levels)`, start: deep.start, end: deep.end, hint: "split it into smaller conditions" }] };
    return { expr, diagnostics: [] };
  } catch (error) {
    if (error instanceof ParseError) return { expr: undefined, diagnostics: [error.diagnostic] };
    if (error instanceof RangeError) return { expr: undefined, diagnostics: [{ code: "EXPR_SYNTAX", message: "expression is nested too deeply", start: 0, end: source.length }] };
    throw error;
  }
}

/** Chains (a.b.c…, x && x && …) parse without recursion but nest the tree; every later walk recurses. */
const MAX_TREE_DEPTH = 256;

/** The first node deeper than MAX_TREE_DEPTH, found without recursion. */
function tooDeep(root: Expr): Expr | undefined {
  const stack: [Expr, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [e, d] = stack.pop()!;
    if (d > MAX_TREE_DEPTH) return e;
    const kids: Expr[] =
      e.kind === "member" ? [e.object] : e.kind === "index" ? [e.object, e.index] : e.kind === "call" ? e.args : e.kind === "array" ? e.items : e.kind === "unary" ? [e.operand] : e.kind === "binary" ? [e.left, e.right] : e.kind === "conditional" ? [e.test, e.then, e.else] : [];
    for (const k of kids) stack.push([k, d + 1]);
  }
  return undefined;
}
