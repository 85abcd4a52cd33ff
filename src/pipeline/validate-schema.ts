import { mixedKindsMessage, refusedKeyMessage } from "./phase-kind-messages.ts";
import type { Document } from "yaml";
import type { Diagnostic, DiagnosticCode } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { validate as validateGenerated } from "../generated/pipeline-validator.ts";
import { keySpan, spanOfPointer } from "./parse-pipeline-text.ts";

interface AjvError {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  propertyName?: string;
}

const validateFn = validateGenerated as unknown as ((data: unknown) => boolean) & { errors?: AjvError[] | null };

// The keys each object kind allows, read from the schema errors' parent schemas
// would need the schema at run time; the generated validator only names the
// offending key, so the allowed keys for did-you-mean come from this table.
const ALLOWED: Record<string, string[]> = {
  "#": ["$schema", "phaseloop", "extends", "include", "name", "description", "params", "agents", "tools", "env", "phases", "stop", "tasks", "hooks"],
  param: ["type", "default", "description", "enum", "required"],
  agent: ["preset", "command", "prompt_via", "prompt_flag", "model", "args", "env", "output_format", "timeout", "idle_timeout", "base_url", "api_key_env", "transient", "description"],
  toolSet: ["read", "write", "bash", "mcp", "on_violation", "description"],
  retry: ["max_attempts", "on", "interval", "backoff", "max_delay", "jitter"],
  output: ["match", "tag", "section", "json", "file", "format", "from", "default", "required", "schema", "description"],
  rule: ["if", "goto", "stop", "reason", "task"],
  phase: ["description", "agent", "prompt", "tools", "run", "when", "timeout", "idle_timeout", "retry", "output", "output_schema", "next", "env", "success_exit_codes", "consecutive_failures", "transient", "ask", "parallel", "join", "max_visits", "exhausted", "pipeline", "params", "sandbox"],
  stopRule: ["if", "outcome", "reason"],
  stop: ["max_iterations", "max_duration", "no_progress", "consecutive_failures", "budget", "when"],
  budget: ["tokens", "cost_usd"],
  tasks: ["source", "max_attempts", "order", "only", "final_gate"],
  hooks: ["before_iteration", "after_iteration", "on_complete", "on_blocked", "on_failed"],
  hook: ["run", "timeout", "on_failure"],
  transient: ["patterns", "exit_codes"],
  fields: ["id", "title", "priority", "done", "blocked", "depends_on", "notes", "attempts"],
  source: ["glob", "file", "pointer", "fields", "write_back"],
};

export { ALLOWED as SCHEMA_ALLOWED_KEYS };

/** The kind of object at a pointer, for the allowed keys in did-you-mean hints. */
function kindOf(ptr: string): string {
  const p = ptr.split("/").slice(1);
  const rules: [RegExp, string][] = [
    [/^$/, "#"],
    [/^params\/[^/]+$/, "param"],
    [/^agents\/[^/]+$/, "agent"],
    [/^(agents|phases)\/[^/]+\/transient$/, "transient"],
    [/^tools\/[^/]+$/, "toolSet"],
    [/^phases\/[^/]+$/, "phase"],
    [/^phases\/[^/]+\/retry$/, "retry"],
    [/^phases\/[^/]+\/output\/[^/]+$/, "output"],
    [/^phases\/[^/]+\/next\/\d+$/, "rule"],
    [/^stop$/, "stop"],
    [/^stop\/budget$/, "budget"],
    [/^stop\/when\/\d+$/, "stopRule"],
    [/^tasks$/, "tasks"],
    [/^tasks\/source$/, "source"],
    [/^tasks\/source\/fields$/, "fields"],
    [/^hooks$/, "hooks"],
    [/^hooks\/[^/]+$/, "hook"],
  ];
  const path = p.join("/");
  return rules.find(([re]) => re.test(path))?.[1] ?? "";
}

/** Schema errors as located diagnostics: one clear error per place, noise from oneOf/anyOf dropped. */
export function validateSchema(value: unknown, document: Document.Parsed | undefined, text: string, file: string): Diagnostic[] {
  if (validateFn(value)) return [];
  const errors = validateFn.errors ?? [];
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  const push = (d: Omit<Diagnostic, "file" | "severity">) => {
    const key = `${d.code}:${d.start}:${d.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ ...d, file, severity: "error" });
  };

  // A branch of anyOf/oneOf that fails at the combinator's own place is a
  // branch that does not fit (noise); one that fails deeper is the branch that
  // fits the value, and its error is the real one.
  const combinators = new Set(errors.filter((e) => e.keyword === "anyOf" || e.keyword === "oneOf").map((e) => e.instancePath));
  const isNoise = (e: AjvError) => isBranch(e.schemaPath) && combinators.has(e.instancePath);
  const kept = errors.filter((e) => !isNoise(e) && !["anyOf", "oneOf", "if", "allOf", "propertyNames"].includes(e.keyword));
  const hasDeeper = (ptr: string) => kept.some((e) => e.instancePath.startsWith(ptr + "/")) || [...combinators].some((c) => c.startsWith(ptr + "/"));
  const specific = new Set(kept.map((e) => e.instancePath));
  for (const e of errors) {
    if (isNoise(e)) continue;
    const ptr = e.instancePath;
    const valueSpan = () => spanOfPointer(document, text, ptr, "value");
    switch (e.keyword) {
      case "additionalProperties": {
        const key = String(e.params.additionalProperty);
        const span = keySpan(document, ptr, key) ?? valueSpan();
        const kind = kindOf(ptr);
        push({ code: "SCHEMA_UNKNOWN_KEY", message: `unknown key "${key}"${where(ptr)}`, ...span, pointer: `${ptr}/${key}`, hint: didYouMean(key, ALLOWED[kind] ?? []) ?? (ALLOWED[kind] ? `allowed keys: ${ALLOWED[kind]!.join(", ")}` : undefined) });
        break;
      }
      case "required": {
        const prop = String(e.params.missingProperty);
        const span = spanOfPointer(document, text, ptr, ptr === "" ? "value" : "key");
        const code: DiagnosticCode = ptr === "" && prop === "phaseloop" ? "SCHEMA_VERSION" : "SCHEMA_REQUIRED";
        push({ code, message: `missing required key "${prop}"${where(ptr)}`, ...(ptr === "" ? { start: 0, end: 0 } : span), pointer: ptr, hint: requiredHint(prop) });
        break;
      }
      case "const":
      case "enum": {
        const allowed = (e.params.allowedValues as unknown[] | undefined) ?? [e.params.allowedValue];
        const actual = valueAt(value, ptr);
        if (ptr === "/phaseloop") {
          push({ code: "SCHEMA_VERSION", message: `unsupported format version ${JSON.stringify(actual)}; this phaseloop reads format 1`, ...valueSpan(), pointer: ptr, hint: "write phaseloop: 1" });
          break;
        }
        push({ code: "SCHEMA_ENUM", message: `${JSON.stringify(actual)} is not allowed${where(ptr)}; expected one of ${allowed.map((a) => JSON.stringify(a)).join(", ")}`, ...valueSpan(), pointer: ptr, hint: typeof actual === "string" ? didYouMean(actual, allowed.map(String)) : undefined });
        break;
      }
      case "type": {
        push({ code: "SCHEMA_TYPE", message: `expected ${article(String(e.params.type))}${where(ptr)}, found ${describe(valueAt(value, ptr))}`, ...valueSpan(), pointer: ptr });
        break;
      }
      case "pattern": {
        if (e.propertyName !== undefined) {
          const span = keySpan(document, ptr, e.propertyName) ?? valueSpan();
          push({ code: "SCHEMA_PATTERN", message: `invalid name "${e.propertyName}"${where(ptr)}: names start with a letter or "_" and hold letters, digits, "_" and "-"`, ...span, pointer: `${ptr}/${e.propertyName}` });
          break;
        }
        push({ code: "SCHEMA_PATTERN", message: patternMessage(ptr, valueAt(value, ptr)), ...valueSpan(), pointer: ptr, hint: patternHint(ptr) });
        break;
      }
      case "minimum":
      case "maximum":
      case "exclusiveMinimum":
      case "minItems":
      case "minLength":
      case "minProperties": {
        push({ code: "SCHEMA_RANGE", message: `${rangeMessage(e)}${where(ptr)}`, ...valueSpan(), pointer: ptr });
        break;
      }
      case "anyOf":
      case "oneOf": {
        if (hasDeeper(ptr) || specific.has(ptr)) break;
        const msg = combinatorMessage(ptr, valueAt(value, ptr));
        push({ code: msg.code, message: msg.message, ...valueSpan(), pointer: ptr, hint: msg.hint });
        break;
      }
      case "not": {
        const m = mixedKindsMessage(valueAt(value, ptr));
        push({ code: "SCHEMA_INVALID", message: `${m.message}${where(ptr)}`, ...valueSpan(), pointer: ptr, hint: m.hint });
        break;
      }
      case "false schema": {
        const key = ptr.split("/").pop() ?? "";
        const m = refusedKeyMessage(valueAt(value, ptr.split("/").slice(0, -1).join("/")), key);
        push({ code: "SCHEMA_UNKNOWN_KEY", message: m.message, ...spanOfPointer(document, text, ptr, "key"), pointer: ptr, hint: m.hint });
        break;
      }
      case "if":
      case "propertyNames":
      case "allOf":
        break;
      default:
        push({ code: "SCHEMA_INVALID", message: `${e.message ?? "invalid value"}${where(ptr)}`, ...valueSpan(), pointer: ptr });
    }
  }
  if (out.length === 0) out.push({ code: "SCHEMA_INVALID", severity: "error", message: "the document does not match the pipeline schema", file, start: 0, end: 0 });
  return out;
}

function isBranch(schemaPath: string): boolean {
  return /\/(anyOf|oneOf)\/\d+/.test(schemaPath);
}

function combinatorMessage(ptr: string, actual: unknown): { code: DiagnosticCode; message: string; hint?: string } {
  const last = ptr.split("/");
  const parent = last[last.length - 2];
  const key = last[last.length - 1];
  const obj = actual && typeof actual === "object" && !Array.isArray(actual) ? (actual as Record<string, unknown>) : undefined;
  if (parent === "output") {
    if (!obj) return { code: "SCHEMA_TYPE", message: `output "${key}" must be a mapping with one of match, tag, section, json, file` };
    const kinds = ["match", "tag", "section", "json", "file"].filter((k) => k in obj);
    return kinds.length === 0
      ? { code: "SCHEMA_REQUIRED", message: `output "${key}" needs one of match, tag, section, json, file`, hint: "e.g. status: { match: 'STATUS: (\\w+)' }" }
      : { code: "SCHEMA_INVALID", message: `output "${key}" has ${kinds.map((k) => `"${k}"`).join(" and ")}; give exactly one extractor` };
  }
  if (parent === "next" && /^\d+$/.test(String(key))) {
    if (!obj) return { code: "SCHEMA_TYPE", message: `a transition rule must be a mapping with goto or stop${where(ptr)}` };
    return "goto" in obj && "stop" in obj
      ? { code: "SCHEMA_INVALID", message: `a transition rule has either "goto" or "stop", not both${where(ptr)}` }
      : { code: "SCHEMA_REQUIRED", message: `a transition rule needs "goto" or "stop"${where(ptr)}`, hint: "add goto: PHASE, or stop: complete | blocked | failed" };
  }
  if (parent === "agents") return { code: "SCHEMA_REQUIRED", message: `agent "${key}" needs a "preset" or a "command"`, hint: "e.g. preset: claude, or command: [node, agent.js]" };
  if (parent === "phases") return { code: "SCHEMA_REQUIRED", message: `phase "${key}" needs an "agent" (with a "prompt"), a "run" command or an "ask" question` };
  if (/^(timeout|idle_timeout|interval|max_delay|max_duration)$/.test(String(key))) {
    return { code: "INVALID_DURATION", message: `${JSON.stringify(actual)} is not a duration${where(ptr)}`, hint: "use seconds (30) or a string such as \"500ms\", \"10s\", \"5m\", \"2h\", \"1h30m\"" };
  }
  if (/^(max_iterations|no_progress|consecutive_failures|max_attempts)$/.test(String(key))) {
    if (typeof actual === "number") return { code: "SCHEMA_RANGE", message: `must be a whole number${/max_/.test(String(key)) ? " of at least 1" : ""}${where(ptr)}, found ${actual}` };
    return { code: "SCHEMA_TYPE", message: `expected a whole number${where(ptr)}, found ${describe(actual)}`, hint: "or a template such as \"{{ params.max }}\"" };
  }
  if (String(key) === "next") return { code: "SCHEMA_TYPE", message: `"next" must be a phase name or a list of rules, found ${describe(actual)}` };
  if (String(key) === "run") return { code: "SCHEMA_TYPE", message: `"run" must be a command string or an argv list, found ${describe(actual)}` };
  if (String(key) === "source") return { code: "SCHEMA_INVALID", message: `a task source has "glob" (markdown files) or "file" (a JSON file)`, hint: "source: { glob: tasks/*.md }" };
  if (parent === "hooks") return { code: "SCHEMA_TYPE", message: `hook "${key}" must be a command string, an argv list, or a mapping with "run"` };
  return { code: "SCHEMA_INVALID", message: `invalid value${where(ptr)}: ${describe(actual)}` };
}

function where(ptr: string): string {
  return ptr === "" ? "" : ` at ${ptr.slice(1).split("/").join(".")}`;
}

function requiredHint(prop: string): string | undefined {
  switch (prop) {
    case "phaseloop":
      return "start the file with phaseloop: 1";
    case "max_iterations":
      return "every loop is bounded: add max_iterations under stop";
    case "stop":
      return "add stop: { max_iterations: 5 }";
    case "phases":
      return "a pipeline needs at least one phase";
    case "prompt":
      return "an agent phase needs a prompt: a file path or inline text";
    case "model":
      return "the openai agent needs the model to ask for, e.g. model: qwen2.5-coder:7b";
    default:
      return undefined;
  }
}

function patternMessage(ptr: string, actual: unknown): string {
  if (ptr === "/name") return `the pipeline name ${JSON.stringify(actual)} is not kebab-case`;
  if (/\/(goto|next|agent|tools|final_gate)$/.test(ptr)) return `${JSON.stringify(actual)} is not a valid name${where(ptr)}`;
  if (/timeout|interval|max_delay|max_duration/.test(ptr)) return `${JSON.stringify(actual)} is not a duration${where(ptr)}`;
  return `${JSON.stringify(actual)} does not have the expected form${where(ptr)}`;
}

function patternHint(ptr: string): string | undefined {
  if (ptr === "/name") return "use lowercase words joined by \"-\", such as execute-review";
  return undefined;
}

function rangeMessage(e: AjvError): string {
  const limit = e.params.limit;
  switch (e.keyword) {
    case "minimum":
      return `must be at least ${limit}`;
    case "maximum":
      return `must be at most ${limit}`;
    case "exclusiveMinimum":
      return `must be more than ${limit}`;
    case "minItems":
      return `must have at least ${limit} item${limit === 1 ? "" : "s"}`;
    case "minProperties":
      return `must have at least ${limit} entr${limit === 1 ? "y" : "ies"}`;
    default:
      return `must not be empty`;
  }
}

function article(type: string): string {
  const t = type.split(",").map((x) => (x === "object" ? "mapping" : x === "array" ? "list" : x));
  return t.length > 1 ? t.join(" or ") : /^[aeiou]/.test(t[0]!) ? `an ${t[0]}` : `a ${t[0]}`;
}

export function describe(v: unknown): string {
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a mapping";
  if (typeof v === "string") return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + "…" : v)}`;
  return `${typeof v} ${JSON.stringify(v)}`;
}

function valueAt(value: unknown, ptr: string): unknown {
  if (ptr === "") return value;
  let cur: unknown = value;
  for (const raw of ptr.slice(1).split("/")) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (cur && typeof cur === "object") cur = (cur as Record<string, unknown>)[seg];
    else return undefined;
  }
  return cur;
}
