import type { Expr } from "./ast.ts";
import type { Template } from "./template.ts";

/** Whether a template calls the named function anywhere (file() in a prompt is read by the runner). */
export function usesFunction(template: Template, name: string): boolean {
  const visit = (e: Expr): boolean => {
    switch (e.kind) {
      case "call":
        return e.callee === name || e.args.some(visit);
      case "member":
        return visit(e.object);
      case "index":
        return visit(e.object) || visit(e.index);
      case "array":
        return e.items.some(visit);
      case "unary":
        return visit(e.operand);
      case "conditional":
        return visit(e.test) || visit(e.then) || visit(e.else);
      case "binary":
        return visit(e.left) || visit(e.right);
      default:
        return false;
    }
  };
  return template.parts.some((p) => p.kind === "expr" && visit(p.expr));
}
