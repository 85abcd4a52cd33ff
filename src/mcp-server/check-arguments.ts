/**
 * Arguments are checked against each tool's JSON Schema before the tool
 * runs: a wrong type, a missing argument or one the tool does not take is a
 * refusal in words. Nothing a client adds is passed on: there is no argument
 * that loosens a run's sandbox or tools, and one sent anyway is refused.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { ControlError } from "../control/control-error.ts";
import type { ToolDefinition } from "./tool-definition.ts";

const FENCE_WORDS = /sandbox|tool|allow|permission|network|write|fence|env|workdir|cwd|dangerous|yolo|bypass|skip/i;

export function argumentChecker(tools: readonly ToolDefinition<never>[]): (tool: ToolDefinition<never>, args: unknown) => Record<string, unknown> {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const compiled = new Map<string, ValidateFunction>();
  for (const tool of tools) compiled.set(tool.name, ajv.compile(tool.inputSchema));
  return (tool, args) => {
    const value = args ?? {};
    const validate = compiled.get(tool.name)!;
    if (validate(value)) return value as Record<string, unknown>;
    // the alternatives of an anyOf are said once, by the anyOf
    const errors = (validate.errors ?? []).filter((e) => !e.schemaPath.includes("/anyOf/"));
    throw new ControlError("BAD_ARGUMENT", errors.map((e) => describe(tool, e)).join("; "), { hint: `${tool.name} takes: ${Object.keys(tool.inputSchema.properties).join(", ") || "no arguments"}` });
  };
}

function describe(tool: ToolDefinition<never>, e: ErrorObject): string {
  const where = e.instancePath ? `"${e.instancePath.slice(1).replace(/\//g, ".")}"` : "the arguments";
  if (e.keyword === "additionalProperties") {
    const name = String((e.params as { additionalProperty: string }).additionalProperty);
    if (e.instancePath === "" && FENCE_WORDS.test(name)) return `${tool.name} takes no argument "${name}": a run keeps the sandbox, tools and workdir its pipeline and this server give it, and nothing sent here can change them`;
    return `${where} has an argument ${tool.name} does not take: "${name}"`;
  }
  if (e.keyword === "anyOf") return `${where} must be a string, a number or true/false`;
  if (e.keyword === "required") return `${tool.name} needs "${String((e.params as { missingProperty: string }).missingProperty)}"`;
  return `${where} ${e.message ?? "is not valid"}`;
}
