import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import type { JsonValue } from "../pipeline/spec.ts";
import { resolveLimit } from "./initial-snapshot.ts";
import type { Machine } from "./types.ts";

/** A param's problem, pointing at its definition when it has one (the CLI locates it there). */
const bad = (message: string, hint?: string, name?: string): Diagnostic => ({ code: "PARAM_INVALID", severity: "error", message, hint, start: 0, end: 0, ...(name !== undefined ? { pointer: `/params/${name.replace(/~/g, "~0").replace(/\//g, "~1")}` } : {}) });

/**
 * Typed params from `--param k=v` text: converted to the declared type,
 * defaults filled in, required ones checked, unknown names refused. Limits
 * given as templates are resolved too, so a bad value is caught before the run.
 */
export function resolveParams(machine: Machine, raw: Record<string, string>): { params: Record<string, JsonValue>; diagnostics: Diagnostic[] } {
  const params: Record<string, JsonValue> = {};
  const diagnostics: Diagnostic[] = [];
  const declared = Object.keys(machine.params);
  for (const name of Object.keys(raw)) {
    if (!machine.params[name]) diagnostics.push(bad(`unknown param "${name}"`, didYouMean(name, declared) ?? (declared.length ? `params: ${declared.join(", ")}` : "this pipeline declares no params")));
  }
  for (const [name, spec] of Object.entries(machine.params)) {
    const text = raw[name];
    let value: JsonValue | undefined = spec.default;
    if (text !== undefined) {
      switch (spec.type) {
        case "string":
          value = text;
          break;
        case "boolean":
          if (/^(true|yes|1|on)$/i.test(text)) value = true;
          else if (/^(false|no|0|off)$/i.test(text)) value = false;
          else {
            diagnostics.push(bad(`param "${name}" must be true or false, got "${text}"`, `pass --param ${name}=true or --param ${name}=false`, name));
            continue;
          }
          break;
        case "integer":
        case "number": {
          const n = Number(text);
          if (text.trim() === "" || !Number.isFinite(n) || (spec.type === "integer" && !Number.isInteger(n))) {
            diagnostics.push(bad(`param "${name}" must be ${spec.type === "integer" ? "a whole number" : "a number"}, got "${text}"`, undefined, name));
            continue;
          }
          value = n;
          break;
        }
      }
    }
    if (value === undefined) {
      if (spec.required !== false) {
        diagnostics.push(bad(`param "${name}" is required`, `pass --param ${name}=VALUE${spec.description ? ` (${spec.description})` : ""}`, name));
        continue;
      }
      // an optional param left out reads as its type's empty value; the enum restricts what is given, not the absence
      params[name] = spec.type === "string" ? "" : spec.type === "boolean" ? false : 0;
      continue;
    }
    if (spec.enum && !spec.enum.includes(value as string | number)) {
      diagnostics.push(bad(`param "${name}" must be one of ${spec.enum.map((e) => JSON.stringify(e)).join(", ")}, got ${JSON.stringify(value)}`, typeof value === "string" ? didYouMean(value, spec.enum.map(String)) : undefined, name));
      continue;
    }
    params[name] = value;
  }
  if (diagnostics.length === 0) {
    const limits: [string, Machine["limits"][keyof Machine["limits"]] | undefined][] = [
      ["stop.max_iterations", machine.limits.maxIterations],
      ["stop.no_progress", machine.limits.noProgress],
      ["stop.consecutive_failures", machine.limits.consecutiveFailures],
      ["tasks.max_attempts", machine.tasks?.maxAttempts],
    ];
    for (const [where, source] of limits) {
      if (source === null || source === undefined || typeof source === "number") continue;
      const n = resolveLimit(source, params);
      if (n === null || (where === "stop.max_iterations" && n < 1)) diagnostics.push(bad(`${where} must resolve to a whole number${where === "stop.max_iterations" ? " of at least 1" : ""}`));
    }
  }
  return { params, diagnostics };
}
