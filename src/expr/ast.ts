import type { JsonValue } from "./json-value.ts";

/** Expression AST: plain JSON data; every node has its offsets in the source. */
export type Expr =
  | { kind: "literal"; value: JsonValue; start: number; end: number }
  | { kind: "ident"; name: string; start: number; end: number }
  | { kind: "member"; object: Expr; property: string; start: number; end: number; propStart: number }
  | { kind: "index"; object: Expr; index: Expr; start: number; end: number }
  | { kind: "call"; callee: string; args: Expr[]; start: number; end: number; calleeEnd: number }
  | { kind: "array"; items: Expr[]; start: number; end: number }
  | { kind: "unary"; op: "!" | "-"; operand: Expr; start: number; end: number }
  | { kind: "binary"; op: BinaryOp; left: Expr; right: Expr; start: number; end: number; opStart: number }
  | { kind: "conditional"; test: Expr; then: Expr; else: Expr; start: number; end: number };

export type BinaryOp = "||" | "&&" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "+" | "-" | "*" | "/" | "%";
