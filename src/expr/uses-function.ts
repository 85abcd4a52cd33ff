import type { Expr } from "./ast.ts";
import type { Template } from "./template.ts";

/** The calls of the named function in an expression, outermost first. */
export function callsOf(expr: Expr, name: string): Extract<Expr, { kind: "call" }>[] {
  const out: Extract<Expr, { kind: "call" }>[] = [];
  const visit = (e: Expr): void => {
    switch (e.kind) {
      case "call":
        if (e.callee === name) out.push(e);
        return e.args.forEach(visit);
      case "member":
        return visit(e.object);
      case "index":
        visit(e.object);
        return visit(e.index);
      case "array":
        return e.items.forEach(visit);
      case "unary":
        return visit(e.operand);
      case "conditional":
        visit(e.test);
        visit(e.then);
        return visit(e.else);
      case "binary":
        visit(e.left);
        return visit(e.right);
      default:
        return;
    }
  };
  visit(expr);
  return out;
}

/** Whether a template calls the named function anywhere (file() in a prompt is read by the runner). */
export function usesFunction(template: Template, name: string): boolean {
  return template.parts.some((p) => p.kind === "expr" && callsOf(p.expr, name).length > 0);
}
