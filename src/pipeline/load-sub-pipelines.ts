/**
 * Sub-pipelines (`pipeline:` phases): each child is found as `extends` finds
 * its files (a path relative to the naming file, or a package subpath), read
 * and validated like any pipeline, its own children in turn. A child's
 * problems stay located in the child's file, with a note for each phase that
 * led there; a chain of pipelines that comes back to one of its own files is
 * an error at the phase that closes it; the params a phase binds are checked
 * against those the child declares. Pure: files are read through the host.
 */
import type { Diagnostic, RelatedInfo } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import type { LoadedPipeline, ReadHost } from "./loaded-pipeline.ts";
import { parsePipelineText, spanOfPointer } from "./parse-pipeline-text.ts";
import { joinPath } from "./paths.ts";
import { resolveSpecifier } from "./resolve-specifier.ts";
import { isUserWord, parseTemplate } from "../expr/index.ts";
import { paramsRunAsCode } from "./params-as-code.ts";


/** How deep sub-pipelines may nest: a chain longer than this is taken for a cycle. */
const MAX_DEPTH = 16;

type LoadOne = (file: string, host: ReadHost) => Promise<LoadedPipeline>;

/**
 * Load the children of `loaded` (and theirs), adding their diagnostics to
 * `loaded.diagnostics` and the children to `loaded.children`. `stack` holds
 * the absolute files of the pipelines that led here, `loaded`'s last.
 */
export async function loadSubPipelines(loaded: LoadedPipeline, host: ReadHost, loadOne: LoadOne, stack: string[] = [absolute(loaded.file, host)], inherited?: Inherited): Promise<void> {
  const phases = loaded.doc?.phases;
  if (!phases) return;
  // the sandbox this pipeline runs its children under: its own, never weaker than what it inherited
  const own = loaded.doc?.sandbox;
  const mode: Inherited = inherited && (own === undefined || STRENGTH[own] < STRENGTH[inherited.mode]) ? inherited : { mode: own ?? "auto", file: loaded.file, pointer: own !== undefined ? "/sandbox" : undefined };
  let where: ((pointer: string, mode?: "key" | "value") => Pick<Diagnostic, "file" | "start" | "end" | "related">) | undefined;
  const locate = (pointer: string, mode: "key" | "value" = "value") => {
    if (!where) {
      if (loaded.locate) where = (p) => loaded.locate!(p);
      else {
        const document = parsePipelineText(loaded.text, loaded.file).document;
        where = (p, m) => ({ file: loaded.file, ...spanOfPointer(document, loaded.text, p, m ?? "value") });
      }
    }
    return where(pointer, mode);
  };
  for (const [name, phase] of Object.entries(phases)) {
    if (typeof phase?.pipeline !== "string") continue;
    const base = `/phases/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    const at = locate(`${base}/pipeline`);
    const error = (code: Diagnostic["code"], message: string, hint?: string, span = at) => loaded.diagnostics.push({ code, severity: "error", message, ...span, pointer: `${base}/pipeline`, ...(hint ? { hint } : {}) });
    const resolved = await resolveSpecifier(phase.pipeline, loaded.file, host);
    if (!resolved.ok) {
      error("SUB_PIPELINE_NOT_FOUND", `phase "${name}": ${resolved.message}`, resolved.hint);
      continue;
    }
    const file = resolved.file;
    const abs = absolute(file, host);
    const seen = stack.indexOf(abs);
    if (seen >= 0 || stack.length > MAX_DEPTH) {
      const chain = [...stack.slice(Math.max(seen, 0)), abs].map(shortName).join(" → ");
      error("SUB_PIPELINE_CYCLE", seen >= 0 ? `phase "${name}" runs a pipeline that leads back to itself: ${chain}` : `phase "${name}": sub-pipelines nest more than ${MAX_DEPTH} deep`, "a pipeline cannot run itself, directly or through its sub-pipelines");
      continue;
    }
    const child = await loadOne(file, host);
    const note: RelatedInfo = { file: at.file, start: at.start, end: at.end, message: `run by phase "${name}" of ${at.file ?? loaded.file}` };
    if (child.diagnostics.some((d) => d.code === "FILE_NOT_FOUND" && d.file === file)) {
      error("SUB_PIPELINE_NOT_FOUND", `phase "${name}": cannot read "${file}": no such file`, "the path is relative to the file that names it");
      continue;
    }
    await loadSubPipelines(child, host, loadOne, [...stack, abs], mode);
    if (child.doc) checkSandboxTightens(child, mode, { ...at, message: `run by phase "${name}" of ${at.file ?? loaded.file}, under sandbox: ${mode.mode}${mode.pointer ? "" : " (the default)"}` });
    // the child's problems, each with the phase that led there (after the child's own chain)
    for (const d of child.diagnostics) loaded.diagnostics.push({ ...d, related: [...(d.related ?? []), note] });
    (loaded.children ??= {})[name] = { file, loaded: child };
    if (child.doc) checkBoundParams(name, base, phase.params ?? {}, child, locate, loaded.diagnostics);
    if (child.doc) checkParamsAsCode(name, base, phase.params ?? {}, child, locate, loaded.diagnostics);
  }
}

type SandboxMode = "off" | "auto" | "required";
const STRENGTH: Record<SandboxMode, number> = { off: 0, auto: 1, required: 2 };

/** The sandbox a pipeline's children run under, and where it was set. */
interface Inherited {
  mode: SandboxMode;
  file: string;
  pointer?: string;
}

/**
 * A child may only tighten: its `sandbox`, a phase's or a hook's, weaker than
 * the parent's, is an error in the child with the parent's phase as related
 * span (the run tightens it anyway).
 */
function checkSandboxTightens(child: LoadedPipeline, parent: Inherited, note: RelatedInfo): void {
  const doc = child.doc!;
  let document: ReturnType<typeof parsePipelineText>["document"] | undefined;
  const locate = (pointer: string) => {
    if (child.locate) return child.locate(pointer);
    document ??= parsePipelineText(child.text, child.file).document;
    return { file: child.file, ...spanOfPointer(document, child.text, pointer, "value") };
  };
  const check = (value: unknown, pointer: string, what: string) => {
    if (typeof value !== "string" || !(value in STRENGTH) || STRENGTH[value as SandboxMode] >= STRENGTH[parent.mode]) return;
    child.diagnostics.push({
      code: "SUB_PIPELINE_SANDBOX",
      severity: "error",
      message: `${what} says sandbox: ${value}, weaker than the sandbox: ${parent.mode} of the pipeline that runs it`,
      ...locate(pointer),
      pointer,
      related: [note],
      hint: `a sub-pipeline can only tighten its parent's sandbox: remove the setting or make it ${parent.mode}`,
    });
  };
  check(doc.sandbox, "/sandbox", "the pipeline");
  for (const [name, phase] of Object.entries(doc.phases ?? {})) check((phase as { sandbox?: unknown } | undefined)?.sandbox, `/phases/${name.replace(/~/g, "~0").replace(/\//g, "~1")}/sandbox`, `phase "${name}"`);
  for (const [name, hook] of Object.entries(doc.hooks ?? {})) check(hook && typeof hook === "object" && !Array.isArray(hook) ? (hook as { sandbox?: unknown }).sandbox : undefined, `/hooks/${name}/sandbox`, `hook ${name}`);
}

/**
 * A param the child runs as code (`[sh, -c, "{{ params.check }}"]`) is the
 * user's own command line; bound from data (a phase's output, a task, an
 * answer), that data would run. Only the parent's own params, env and
 * pipeline folder may fill it.
 */
function checkParamsAsCode(
  name: string,
  base: string,
  bound: Record<string, unknown>,
  child: LoadedPipeline,
  locate: (pointer: string, mode?: "key" | "value") => Pick<Diagnostic, "file" | "start" | "end" | "related">,
  out: Diagnostic[],
): void {
  const code = paramsRunAsCode(child.doc!);
  for (const [key, value] of Object.entries(bound)) {
    const where = code.get(key);
    if (where === undefined || typeof value !== "string") continue;
    const t = parseTemplate(value).template;
    if (!t) continue;
    const data = t.parts.find((p) => p.kind === "expr" && !isUserWord(p.expr));
    if (!data) continue;
    const pointer = `${base}/params/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    let span: Pick<Diagnostic, "file" | "start" | "end"> | undefined;
    try {
      const document = parsePipelineText(child.text, child.file).document;
      span = { file: child.file, ...spanOfPointer(document, child.text, where, "value") };
    } catch {
      span = undefined;
    }
    out.push({
      code: "SUB_PIPELINE_PARAM",
      severity: "error",
      message: `phase "${name}" fills param "${key}" from data, and ${child.file} runs that param as a command: the data would run`,
      ...locate(pointer),
      pointer,
      ...(span ? { related: [{ ...span, message: `param "${key}" runs as code here` }] } : {}),
      hint: "bind it from the parent's own params or env only; pass data as another param the child uses as an argument",
    });
  }
}

/** The params a phase binds, against the child's declared ones: none unknown, every required one bound. */
function checkBoundParams(
  name: string,
  base: string,
  bound: Record<string, unknown>,
  child: LoadedPipeline,
  locate: (pointer: string, mode?: "key" | "value") => Pick<Diagnostic, "file" | "start" | "end" | "related">,
  out: Diagnostic[],
): void {
  const declared = child.doc?.params ?? {};
  const names = Object.keys(declared);
  for (const key of Object.keys(bound)) {
    if (key in declared) continue;
    const pointer = `${base}/params/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    const hint = didYouMean(key, names) ?? (names.length ? `${child.file} declares: ${names.join(", ")}` : `${child.file} declares no params`);
    out.push({ code: "SUB_PIPELINE_PARAM", severity: "error", message: `phase "${name}" binds param "${key}", which ${child.file} does not declare`, ...locate(pointer, "key"), pointer, hint });
  }
  for (const [key, spec] of Object.entries(declared)) {
    if (key in bound || spec?.default !== undefined || spec?.required === false) continue;
    const pointer = bound && Object.keys(bound).length ? `${base}/params` : `${base}/pipeline`;
    out.push({ code: "SUB_PIPELINE_PARAM", severity: "error", message: `phase "${name}" does not bind param "${key}", which ${child.file} requires`, ...locate(pointer), pointer, hint: `add params: { ${key}: … } to phase "${name}"` });
  }
}

function absolute(file: string, host: ReadHost): string {
  return file.startsWith("/") ? joinPath("/", file) : joinPath(host.cwd ?? "/", file);
}

function shortName(abs: string): string {
  return abs.slice(abs.lastIndexOf("/") + 1);
}
