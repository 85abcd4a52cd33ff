/**
 * Reading a phase's result: the extractors of the format (match, tag, section,
 * json, file), defaults, required outputs, and JSON Schema checks. Pure: file
 * contents come in as data.
 */
import { parse as parseToml } from "smol-toml";
import { parse as parseYaml } from "yaml";
import type { JsonValue, OutputSpec } from "../pipeline/spec.ts";

export interface ExtractSources {
  /** The agent's final message (a command's stdout). */
  text: string;
  stdout: string;
  stderr: string;
  /** Output files by their rendered path: content, or undefined when the phase did not write it. */
  files: Record<string, string | undefined>;
  /** The structured answer a CLI returned beside the text under a schema it enforced: `json` outputs read it instead of the text. */
  structured?: JsonValue;
}

export interface ExtractResult {
  output: Record<string, JsonValue>;
  errors: { name: string; message: string }[];
}

export type SchemaCheck = (schema: Record<string, unknown>, value: JsonValue) => string | undefined;

/**
 * Extract every declared output. `filePaths` maps output names to their rendered
 * file path (for `file` outputs). Missing values take their default, else null;
 * a missing required value is an error (the phase fails with output_invalid).
 */
export function extractOutputs(
  specs: Record<string, OutputSpec>,
  sources: ExtractSources,
  filePaths: Record<string, string> = {},
  checkSchema?: SchemaCheck,
  outputSchema?: Record<string, unknown>,
): ExtractResult {
  const output: Record<string, JsonValue> = {};
  const errors: ExtractResult["errors"] = [];
  for (const [name, spec] of Object.entries(specs)) {
    const text = spec.from === "stdout" ? sources.stdout : spec.from === "stderr" ? sources.stderr : sources.text;
    let value: JsonValue | undefined;
    try {
      value =
        spec.json !== undefined && sources.structured !== undefined && (spec.from ?? "text") === "text"
          ? resolvePointer(sources.structured, spec.json === true ? "" : spec.json)
          : extractOne(spec, text, filePaths[name] !== undefined ? sources.files[filePaths[name]!] : undefined, filePaths[name]);
    } catch (error) {
      errors.push({ name, message: `output "${name}": ${(error as Error).message}` });
      value = undefined;
    }
    if (value === undefined) {
      if (spec.required) {
        if (!errors.some((e) => e.name === name)) errors.push({ name, message: `output "${name}" is required but was not found${spec.file ? ` (no file ${filePaths[name] ?? spec.file})` : ""}` });
      }
      value = spec.default !== undefined ? spec.default : null;
    } else if (spec.schema && checkSchema) {
      const problem = checkSchema(spec.schema, value);
      if (problem) errors.push({ name, message: `output "${name}" does not match its schema: ${problem}` });
    }
    output[name] = value;
  }
  if (outputSchema && checkSchema) {
    const problem = checkSchema(outputSchema, output);
    if (problem) errors.push({ name: "*", message: `the output does not match output_schema: ${problem}` });
  }
  return { output, errors };
}

function extractOne(spec: OutputSpec, text: string, fileText: string | undefined, filePath: string | undefined): JsonValue | undefined {
  if (spec.match !== undefined) return extractMatch(text, spec.match);
  if (spec.tag !== undefined) return extractTag(text, spec.tag);
  if (spec.section !== undefined) return extractSection(text, spec.section);
  if (spec.json !== undefined) return extractJson(text, spec.json === true ? "" : spec.json);
  if (spec.file !== undefined) {
    if (fileText === undefined) return undefined;
    return parseFile(fileText, spec.format ?? formatOf(filePath ?? spec.file));
  }
  return undefined;
}

/** The last match's first group (agents restate instructions before their verdict). */
export function extractMatch(text: string, pattern: string): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, "gm");
  } catch (error) {
    throw new Error(`invalid regular expression: ${(error as Error).message}`);
  }
  let last: RegExpExecArray | undefined;
  for (const m of text.matchAll(re)) last = m;
  if (!last) return undefined;
  return (last[1] ?? last[0]).trim();
}

/** The text inside the last <tag>…</tag>. */
export function extractTag(text: string, tag: string): string | undefined {
  const safe = tag.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const re = new RegExp(`<${safe}(?:\\s[^>]*)?>([\\s\\S]*?)</${safe}\\s*>`, "gi");
  let last: string | undefined;
  for (const m of text.matchAll(re)) last = m[1];
  return last?.trim();
}

/** List items under a heading: `## NEXT STEPS`, `NEXT STEPS:`, `**NEXT STEPS:**`. */
export function extractSection(text: string, title: string): string[] | undefined {
  const lines = text.split(/\r?\n/);
  const wanted = normaliseHeading(title);
  let start = -1;
  for (let i = 0; i < lines.length; i++) if (normaliseHeading(lines[i]!) === wanted) start = i;
  if (start < 0) return undefined;
  const items: string[] = [];
  let seenItem = false;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i]!;
    const item = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (item) {
      items.push(item[1]!.trim());
      seenItem = true;
      continue;
    }
    if (line.trim() === "") {
      if (seenItem) break;
      continue;
    }
    if (/^\s{2,}\S/.test(line) && seenItem) {
      items[items.length - 1] += ` ${line.trim()}`;
      continue;
    }
    break; // next heading or prose
  }
  return items;
}

function normaliseHeading(line: string): string {
  return line
    .trim()
    .replace(/^#+\s*/, "")
    .replace(/\*\*|__/g, "")
    .replace(/:\s*$/, "")
    .trim()
    .toLowerCase();
}

/** The final message as JSON: the whole text, else the last ```json block, else the last balanced {...}. */
export function extractJson(text: string, pointer: string): JsonValue | undefined {
  const value = parseJsonLoose(text);
  if (value === undefined) return undefined;
  return pointer === "" ? value : resolvePointer(value, pointer);
}

function parseJsonLoose(text: string): JsonValue | undefined {
  const t = text.trim();
  try {
    return JSON.parse(t) as JsonValue;
  } catch {
    // fall through
  }
  const fences = [...t.matchAll(/```(?:json)?\s*\n([\s\S]*?)```/g)];
  for (let i = fences.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(fences[i]![1]!) as JsonValue;
    } catch {
      // try the one before
    }
  }
  for (let end = t.lastIndexOf("}"); end >= 0; end = t.lastIndexOf("}", end - 1)) {
    let depth = 0;
    let inString = false;
    for (let i = end; i >= 0; i--) {
      const ch = t[i];
      if (ch === '"' && t[i - 1] !== "\\") inString = !inString;
      if (inString) continue;
      if (ch === "}") depth++;
      else if (ch === "{" && --depth === 0) {
        try {
          return JSON.parse(t.slice(i, end + 1)) as JsonValue;
        } catch {
          break;
        }
      }
    }
  }
  return undefined;
}

export function resolvePointer(value: JsonValue, pointer: string): JsonValue | undefined {
  if (pointer === "" || pointer === "/") return value;
  let cur: JsonValue | undefined = value;
  for (const raw of pointer.replace(/^\//, "").split("/")) {
    const seg = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (Array.isArray(cur)) cur = cur[Number(seg)];
    else if (cur && typeof cur === "object") cur = (cur as Record<string, JsonValue>)[seg];
    else return undefined;
  }
  return cur;
}

export function formatOf(path: string): "toml" | "json" | "yaml" | "text" {
  if (/\.toml$/i.test(path)) return "toml";
  if (/\.json$/i.test(path)) return "json";
  if (/\.ya?ml$/i.test(path)) return "yaml";
  return "text";
}

export function parseFile(text: string, format: "toml" | "json" | "yaml" | "text"): JsonValue {
  switch (format) {
    case "toml":
      return toJson(parseToml(text));
    case "json":
      return JSON.parse(text) as JsonValue;
    case "yaml":
      return toJson(parseYaml(text));
    default:
      return text;
  }
}

/** TOML dates and other non-JSON values become JSON values. */
function toJson(value: unknown): JsonValue {
  return JSON.parse(JSON.stringify(value ?? null)) as JsonValue;
}
