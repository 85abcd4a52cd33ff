/**
 * The expression language of `if`, `when` and `{{ }}` templates: a small
 * typed language over JSON values. Parsed once, checked against the pipeline,
 * evaluated without eval. docs/expressions.md is its reference.
 */
export type { JsonValue } from "./json-value.ts";
export type { Expr, BinaryOp } from "./ast.ts";
export type { ExprDiagnostic } from "./diagnostic.ts";
export { parseExpression } from "./parse-expression.ts";
export { checkExpression, collectReferences, type Scope, type Shape } from "./check-expression.ts";
export { evaluateExpression, type EvalResult } from "./evaluate-expression.ts";
export { FUNCTIONS, isTruthy, deepEqual, FILE_DEFAULT_BYTES, type EvalEnv } from "./functions.ts";
export { callsOf, usesFunction } from "./uses-function.ts";
export {
  parseTemplate,
  checkTemplate,
  templateReferences,
  renderTemplate,
  formatValue,
  isStatic,
  type Template,
  type RenderResult,
} from "./template.ts";
export { shellContexts, isUserWord, type ShellContext } from "./shell-context.ts";
export { renderShell, shellQuote, templateVariable, type ShellRender } from "./shell-render.ts";
export { argvRoles, checkArgv, renderArgv, type ArgvRole, type ArgvRender } from "./shell-argv.ts";
