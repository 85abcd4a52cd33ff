import { hasErrors } from "../diagnostics/diagnostic.ts";
import { applyImplicitBounds, compatFindings } from "./compat-v1.ts";
import { loadSubPipelines } from "./load-sub-pipelines.ts";
import type { LoadedPipeline, ReadHost } from "./loaded-pipeline.ts";
import { parsePipelineText, spanOfPointer, type ParsedText } from "./parse-pipeline-text.ts";
import { composePipeline, locate, namesOtherFiles } from "./resolve-extends.ts";
import type { PipelineDoc } from "./spec.ts";
import { validateSchema } from "./validate-schema.ts";
import { promptFilesOf, validatePipeline } from "./validate-pipeline.ts";

export type { LoadedPipeline, ReadHost };

/** The texts of every file a loaded pipeline's diagnostics may point into. */
export function sourceTexts(loaded: LoadedPipeline): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = { [loaded.file]: loaded.text, ...loaded.promptFiles };
  for (const f of loaded.files ?? []) out[f.file] ??= f.text;
  for (const child of Object.values(loaded.children ?? {})) for (const [k, v] of Object.entries(sourceTexts(child.loaded))) out[k] ??= v;
  return out;
}


/**
 * Validate pipeline text: YAML, schema, then the semantic rules. Pure: prompt
 * files come in as data. Returns every problem found.
 */
export function validatePipelineText(text: string, file: string, promptFiles: Record<string, string | undefined> = {}): LoadedPipeline {
  return validateParsed(parsePipelineText(text, file), text, file, promptFiles);
}

function validateParsed(parsed: ParsedText, text: string, file: string, promptFiles: Record<string, string | undefined>): LoadedPipeline {
  const result: LoadedPipeline = { file, text, diagnostics: [...parsed.diagnostics], promptFiles };
  if (hasErrors(parsed.diagnostics) || parsed.value === undefined) return result;
  const schemaDiagnostics = validateSchema(parsed.value, parsed.document, text, file);
  result.diagnostics.push(...schemaDiagnostics);
  if (schemaDiagnostics.length > 0) return result;
  const doc = parsed.value as PipelineDoc;
  result.doc = doc;
  result.diagnostics.push(...validatePipeline({ doc, document: parsed.document, text, file, promptFiles }));
  // what the rules added since format 1 only warn about, the run makes safe
  if (!hasErrors(result.diagnostics)) {
    result.compat = compatFindings(doc);
    applyImplicitBounds(doc, result.compat);
  }
  return result;
}

/** Read a pipeline, its prompt files and its sub-pipelines through the host, then validate. */
export async function loadPipeline(file: string, host: ReadHost): Promise<LoadedPipeline> {
  const loaded = await loadPipelineFile(file, host);
  await loadSubPipelines(loaded, host, loadPipelineFile);
  return loaded;
}

async function loadPipelineFile(file: string, host: ReadHost): Promise<LoadedPipeline> {
  const text = await host.readFile(file);
  if (text === undefined || typeof text === "object") {
    const message = text === undefined ? `cannot read "${file}": no such file` : text.problem;
    return { file, text: "", diagnostics: [{ code: text === undefined ? "FILE_NOT_FOUND" : "FILE_UNREADABLE", severity: "error", message, file, start: 0, end: 0 }], promptFiles: {} };
  }
  const parsed = parsePipelineText(text, file);
  if (!hasErrors(parsed.diagnostics) && namesOtherFiles(parsed.value) && parsed.document) return loadComposed(file, text, parsed, host);
  const promptFiles: Record<string, string | undefined> = {};
  const problems = new Map<string, string>();
  for (const path of promptFilesOf(parsed.value, file)) {
    const read = await host.readFile(path);
    if (typeof read === "object") problems.set(path, read.problem);
    promptFiles[path] = typeof read === "string" ? read : undefined;
  }
  const loaded = validateParsed(parsed, text, file, promptFiles);
  explainUnreadable(loaded, problems);
  return loaded;
}

/** A pipeline that extends or includes other files: merge them, validate the result, locate each problem in its own file. */
async function loadComposed(file: string, text: string, parsed: ParsedText, host: ReadHost): Promise<LoadedPipeline> {
  const composed = await composePipeline(file, text, parsed.document!, host);
  const result: LoadedPipeline = { file, text, diagnostics: [...parsed.diagnostics, ...composed.diagnostics], promptFiles: {}, files: composed.files };
  if (hasErrors(composed.diagnostics) || composed.value === undefined) return result;
  result.merged = composed.value;
  result.locate = (pointer) => {
    const d = locate({ code: "INTERNAL", severity: "error", message: "", file, ...spanOfPointer(composed.document, composed.text, pointer) }, composed, file);
    return { file: d.file, start: d.start, end: d.end, ...(d.related ? { related: d.related } : {}) };
  };
  const problems = new Map<string, string>();
  for (const path of promptFilesOf(composed.value, file)) {
    const read = await host.readFile(path);
    if (typeof read === "object") problems.set(path, read.problem);
    result.promptFiles[path] = typeof read === "string" ? read : undefined;
  }
  const merged: ParsedText = { document: composed.document, value: composed.value, diagnostics: [] };
  const checked = validateParsed(merged, composed.text, file, result.promptFiles);
  result.doc = checked.doc;
  if (checked.compat) result.compat = checked.compat;
  result.diagnostics.push(...checked.diagnostics.map((d) => locate(d, composed, file)));
  explainUnreadable(result, problems);
  return result;
}

function explainUnreadable(loaded: LoadedPipeline, problems: Map<string, string>): void {
  // a prompt that exists but cannot be read says so, where the missing one would
  for (const d of loaded.diagnostics) {
    if (d.code !== "PROMPT_NOT_FOUND") continue;
    const path = [...problems.keys()].find((p) => d.message.includes(`"${p}"`));
    if (path !== undefined) Object.assign(d, { code: "FILE_UNREADABLE", message: `prompt file: ${problems.get(path)}`, hint: "a prompt file is a regular text file of at most 2 MB" });
  }
}
