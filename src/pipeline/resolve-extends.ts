/**
 * `extends:` and `include:`: read the chain of files a pipeline names, merge
 * them (merge-pipelines.ts), and keep for every value the file it was written
 * in. The files are laid one after the other in one text, each node's range
 * moved to its file's place in it, so the existing rules locate problems in
 * the merged document; `locate` maps a diagnostic back to its own file and
 * adds the chain of files that led there.
 */
import { isMap, isScalar, isSeq, Pair, YAMLMap, type Document, type Scalar } from "yaml";
import type { Diagnostic, RelatedInfo } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { eachStringScalar, isNullNode, keyOf, mergeMaps, pairOf, relocateDocument, withoutKeys } from "./merge-pipelines.ts";
import { parsePipelineText } from "./parse-pipeline-text.ts";
import { dirnameOf, isPromptPath, joinPath } from "./paths.ts";
import { relativePath, resolveSpecifier, type PackageInfo, type ResolveHost } from "./resolve-specifier.ts";

export type SourceRole = "pipeline" | "extends" | "include";

/** One file of a pipeline's chain. */
export interface SourceFile {
  /** The path diagnostics show (relative to the current directory when it is below it). */
  file: string;
  /** The path as resolved (absolute when the current directory is known). */
  path: string;
  text: string;
  role: SourceRole;
  package?: PackageInfo;
  /** Where this file stands in the composed text. */
  offset: number;
  /** The file and span that named this one. */
  via?: { source: SourceFile; start: number; end: number };
}

export interface ComposedPipeline {
  /** The merged document (its nodes' ranges are offsets into `text`). */
  document?: Document.Parsed;
  value?: unknown;
  /** Every file laid one after the other. */
  text: string;
  files: SourceFile[];
  diagnostics: Diagnostic[];
}

/** Keys an included file may hold. */
const INCLUDE_KEYS = ["phaseloop", "$schema", "name", "description", "include", "agents", "tools", "params", "mcp"];
/** The format versions an included file may say it is written in. */
const FORMAT_VERSIONS: readonly unknown[] = [1];
/** The named maps an included file contributes. */
const INCLUDED = ["agents", "tools", "params", "mcp"];
/** The collections an include contributes to, and an override must name something in. */
const COLLECTIONS = ["phases", "agents", "tools", "params", "mcp"] as const;
const KIND: Record<string, string> = { phases: "phase", agents: "agent", tools: "tool set", params: "param", mcp: "MCP server" };
const MAX_FILES = 64;

/** Whether a parsed pipeline names other files (and so needs composing). */
export function namesOtherFiles(value: unknown): boolean {
  return !!value && typeof value === "object" && !Array.isArray(value) && ("extends" in value || "include" in value);
}

/**
 * Read and merge the files `extends:` and `include:` name, starting from a
 * parsed root file. Problems are located in the file they are in.
 */
export async function composePipeline(file: string, text: string, document: Document.Parsed, host: ResolveHost): Promise<ComposedPipeline> {
  const cwd = host.cwd;
  const absolute = (p: string) => (cwd !== undefined && !p.startsWith("/") ? joinPath(cwd, p) : p);
  const shown = (p: string) => {
    if (cwd === undefined || !p.startsWith("/")) return p;
    const rel = relativePath(cwd, p);
    return rel !== undefined && !rel.startsWith("../") ? rel : p;
  };
  const root: SourceFile = { file, path: absolute(file), text, role: "pipeline", offset: 0 };
  const files: SourceFile[] = [root];
  const diagnostics: Diagnostic[] = [];
  let composed = text;
  const rootDir = dirnameOf(root.path);

  const error = (code: Diagnostic["code"], source: SourceFile, span: { start: number; end: number }, message: string, hint?: string) => {
    diagnostics.push({ code, severity: "error", message, file: source.file, start: span.start - source.offset, end: span.end - source.offset, ...(hint ? { hint } : {}), ...chainOf(source) });
  };
  const spanOf = (node: unknown): { start: number; end: number } => {
    const r = (node as { range?: [number, number, number] } | undefined)?.range;
    return r ? { start: r[0], end: r[1] } : { start: 0, end: 0 };
  };

  /** Read, parse and expand the file a specifier names. */
  const load = async (pair: { value: unknown; node: unknown }, from: SourceFile, role: SourceRole, stack: string[]): Promise<{ map: YAMLMap; source: SourceFile } | undefined> => {
    const span = spanOf(pair.node);
    const spec = pair.value;
    if (typeof spec !== "string" || spec.trim() === "") {
      error("SCHEMA_TYPE", from, span, `\`${role}\` names a file: a non-empty string`, role === "extends" ? "extends: ./base.yaml, or a package file such as \"@acme/loops/x.yaml\"" : undefined);
      return undefined;
    }
    const resolved = await resolveSpecifier(spec, from.path, host);
    if (!resolved.ok) {
      error("EXTENDS_NOT_FOUND", from, span, `cannot ${role === "extends" ? "extend" : "include"} "${spec}": ${resolved.message}`, resolved.hint);
      return undefined;
    }
    const path = absolute(resolved.file);
    if (stack.includes(path)) {
      const cycle = [...stack.slice(stack.indexOf(path)), path].map(shown).join(" → ");
      error("EXTENDS_CYCLE", from, span, `"${spec}" leads back to a file that names it: ${cycle}`, "a file may not extend or include itself, directly or through others");
      return undefined;
    }
    if (files.length >= MAX_FILES) {
      error("EXTENDS_CYCLE", from, span, `more than ${MAX_FILES} files in one pipeline's chain`);
      return undefined;
    }
    const read = await host.readFile(path);
    if (read === undefined || typeof read === "object") {
      const why = read === undefined ? `"${shown(path)}" does not exist` : read.problem;
      error(read === undefined ? "EXTENDS_NOT_FOUND" : "FILE_UNREADABLE", from, span, `cannot ${role === "extends" ? "extend" : "include"} "${spec}": ${why}`);
      return undefined;
    }
    const pkg = resolved.package ?? (from.package && path.startsWith(absolute(from.package.dir) + "/") ? from.package : undefined);
    const source: SourceFile = { file: shown(path), path, text: read, role, offset: composed.length + 1, via: { source: from, ...span }, ...(pkg ? { package: pkg } : {}) };
    composed += "\n" + read;
    files.push(source);
    const parsed = parsePipelineText(read, source.file);
    for (const d of parsed.diagnostics) diagnostics.push({ ...d, ...chainOf(source) });
    if (!parsed.document || parsed.value === undefined || parsed.diagnostics.some((d) => d.severity === "error")) return undefined;
    relocateDocument(parsed.document, source.offset);
    if (!isMap(parsed.document.contents)) {
      error("SCHEMA_TYPE", source, spanOf(parsed.document.contents), `${role === "extends" ? "a base pipeline" : "an included file"} is a mapping`);
      return undefined;
    }
    const map = await expand(source, parsed.document.contents, [...stack, path]);
    return map ? { map, source } : undefined;
  };

  /** A file's own map with what it extends and includes merged under it. */
  const expand = async (source: SourceFile, map: YAMLMap, stack: string[]): Promise<YAMLMap | undefined> => {
    if (source !== root) rewritePaths(map, source, rootDir);
    if (source.role === "include") {
      for (const p of map.items) {
        const k = keyOf(p);
        if (k !== undefined && !INCLUDE_KEYS.includes(k)) {
          error("INCLUDE_KEY", source, spanOf((p as Pair).key), `an included file holds agents, tools, params and mcp servers; "${k}" is not one of them`, k === "extends" ? "only a pipeline extends another" : didYouMean(k, INCLUDED) ?? "move it into the pipeline that includes this file");
        }
        // a catalogue may say which format it is written in (checked) and what it is (informational)
        const value = isScalar((p as Pair).value) ? ((p as Pair).value as Scalar).value : (p as Pair).value;
        if (k === "phaseloop" && !FORMAT_VERSIONS.includes(value)) {
          error("SCHEMA_VERSION", source, spanOf((p as Pair).value ?? (p as Pair).key), `unsupported format version ${JSON.stringify(value ?? null)}; this phaseloop reads format 1`, "write phaseloop: 1");
        }
        if ((k === "name" || k === "description") && typeof value !== "string") {
          error("SCHEMA_TYPE", source, spanOf((p as Pair).value ?? (p as Pair).key), `"${k}" of an included file is a string`);
        }
      }
    }
    const ext = pairOf(map, "extends");
    const inc = pairOf(map, "include");
    const own = withoutKeys(map, ["extends", "include", "$schema"]);
    let base: { map: YAMLMap; source: SourceFile } | undefined;
    if (ext && source.role !== "include") {
      base = await load({ value: isScalar(ext.value) ? ext.value.value : undefined, node: ext.value ?? ext.key }, source, "extends", stack);
      if (!base) return undefined;
    }
    let merged = base?.map ?? new YAMLMap();
    if (inc) {
      const list = isSeq(inc.value) ? inc.value.items : isScalar(inc.value) && typeof inc.value.value === "string" ? [inc.value] : undefined;
      if (!list) {
        error("SCHEMA_TYPE", source, spanOf(inc.value ?? inc.key), "`include` is a list of files");
        return undefined;
      }
      const defined = new Map<string, { source: SourceFile; start: number; end: number }>();
      const catalogue = new YAMLMap();
      let failed = false;
      for (const item of list) {
        const got = await load({ value: isScalar(item) ? item.value : undefined, node: item }, source, "include", stack);
        if (!got) {
          failed = true;
          continue;
        }
        for (const section of INCLUDED) {
          const entries = pairOf(got.map, section)?.value;
          if (!isMap(entries)) continue;
          for (const p of entries.items) {
            const name = keyOf(p);
            if (name === undefined) continue;
            const where = spanOf((p as Pair).key);
            const first = defined.get(`${section}/${name}`);
            if (first) {
              error("INCLUDE_CONFLICT", got.source, where, `${KIND[section]} "${name}" is defined by two included files`, "rename one, or define it in the including file, which wins over both");
              const last = diagnostics[diagnostics.length - 1]!;
              last.related = [{ file: first.source.file, start: first.start - first.source.offset, end: first.end - first.source.offset, message: `first defined in ${first.source.file}` }, ...(last.related ?? [])];
              failed = true;
            } else defined.set(`${section}/${name}`, { source: got.source, ...where });
          }
        }
        const picked = new YAMLMap();
        picked.items = got.map.items.filter((p) => INCLUDED.includes(keyOf(p) ?? ""));
        const next = mergeMaps(catalogue, picked);
        catalogue.items = next.items;
      }
      if (failed) return undefined;
      merged = mergeMaps(merged, catalogue);
    }
    if (base) checkOverrides(merged, own, source, base.source);
    return mergeMaps(merged, base ? withoutUnknownOverrides(merged, own) : own);
  };

  /** An override that names nothing in the base: did-you-mean. */
  const checkOverrides = (base: YAMLMap, own: YAMLMap, source: SourceFile, baseSource: SourceFile) => {
    for (const section of COLLECTIONS) {
      const mine = pairOf(own, section)?.value;
      if (!isMap(mine)) continue;
      const theirs = pairOf(base, section)?.value;
      const names = isMap(theirs) ? theirs.items.map(keyOf).filter((k): k is string => k !== undefined) : [];
      for (const p of mine.items) {
        const name = keyOf(p);
        if (name === undefined || names.includes(name)) continue;
        const value = (p as Pair).value;
        const removes = isNullNode(value);
        if (!removes && isComplete(section, value)) continue;
        const hint = didYouMean(name, names) ?? (names.length ? `the base's ${KIND[section]}s: ${names.join(", ")}` : undefined);
        error("OVERRIDE_UNKNOWN", source, spanOf((p as Pair).key), removes ? `removes ${KIND[section]} "${name}", which ${baseSource.file} does not define` : `overrides ${KIND[section]} "${name}", which ${baseSource.file} does not define`, hint ?? (removes ? undefined : newEntryHint(section)));
      }
    }
  };

  const rootMap = document.contents;
  let value: unknown;
  let merged: YAMLMap | undefined;
  if (isMap(rootMap)) merged = await expand(root, rootMap, [root.path]);
  if (!merged || diagnostics.some((d) => d.severity === "error")) return { text: composed, files, diagnostics };
  const out = document.clone() as Document.Parsed;
  out.contents = merged as unknown as typeof out.contents;
  try {
    value = out.toJS({ maxAliasCount: 100 });
  } catch (e) {
    diagnostics.push({ code: "INTERNAL", severity: "error", message: `the merged pipeline cannot be read: ${(e as Error).message}`, file, start: 0, end: 0 });
    return { text: composed, files, diagnostics };
  }
  return { document: out, value, text: composed, files, diagnostics };
}

/** Whether an entry new to the base is a whole definition (not an override of something missing). */
function isComplete(section: string, value: unknown): boolean {
  if (!isMap(value)) return section === "phases" ? false : section === "tools";
  const has = (k: string) => pairOf(value, k) !== undefined;
  if (section === "phases") return PHASE_KINDS.some(has);
  if (section === "agents") return has("preset") || has("command");
  if (section === "params") return has("type");
  if (section === "mcp") return has("command") || has("url");
  return true;
}

/** The keys that make a phase what it is: one of them makes a new phase, not an override. */
const PHASE_KINDS = ["agent", "run", "ask", "parallel", "pipeline"];

function newEntryHint(section: string): string {
  if (section === "phases") return "a new phase needs `agent` (and `prompt`), `run`, `ask` or `parallel`";
  if (section === "agents") return "a new agent needs `preset` or `command`";
  if (section === "mcp") return "a new MCP server needs `command` or `url`";
  return "a new param needs `type`";
}

/** The extending file's map without the entries already reported as overriding nothing. */
function withoutUnknownOverrides(base: YAMLMap, own: YAMLMap): YAMLMap {
  const out = new YAMLMap();
  out.range = own.range;
  out.items = own.items.map((p) => {
    const section = keyOf(p) ?? "";
    if (!(COLLECTIONS as readonly string[]).includes(section) || !isMap(p.value)) return p;
    const theirs = pairOf(base, section)?.value;
    const names = new Set(isMap(theirs) ? theirs.items.map(keyOf) : []);
    const kept = new YAMLMap();
    kept.range = p.value.range;
    kept.items = p.value.items.filter((q) => names.has(keyOf(q)) || (!isNullNode((q as Pair).value) && isComplete(section, (q as Pair).value)));
    return new Pair(p.key, kept);
  });
  return out;
}

/**
 * Paths a base or include wrote relative to itself keep pointing where they
 * did: a prompt file, and `{{ pipeline.dir }}` (scripts shipped beside a recipe).
 */
function rewritePaths(map: YAMLMap, source: SourceFile, rootDir: string): void {
  const dir = dirnameOf(source.path);
  const rel = relativePath(rootDir, dir);
  const phases = pairOf(map, "phases")?.value;
  if (isMap(phases)) {
    for (const p of phases.items) {
      const prompt = pairOf(p.value, "prompt")?.value;
      if (isScalar(prompt) && typeof prompt.value === "string" && isPromptPath(prompt.value)) {
        const target = joinPath(dir, prompt.value.trim());
        prompt.value = relativePath(rootDir, target) ?? target;
      }
    }
  }
  if (rel === ".") return;
  const replacement = rel === undefined ? dir : `{{ pipeline.dir }}/${rel}`;
  eachStringScalar(map, (scalar) => {
    const v = scalar.value as string;
    if (/\{\{\s*pipeline\.dir\s*\}\}/.test(v)) scalar.value = v.replace(/\{\{\s*pipeline\.dir\s*\}\}/g, replacement);
  });
}

/** The notes that say which files led to this one. */
export function chainOf(source: SourceFile): { related?: RelatedInfo[] } {
  const related: RelatedInfo[] = [];
  for (let s: SourceFile | undefined = source; s?.via; s = s.via.source) {
    const by = s.via.source;
    related.push({ file: by.file, start: s.via.start - by.offset, end: s.via.end - by.offset, message: `${s.role === "include" ? "included" : "extended"} by ${by.file}` });
  }
  return related.length ? { related } : {};
}

/** Move a diagnostic on the composed text back into the file it points into, with its chain. */
export function locate(d: Diagnostic, composed: ComposedPipeline, rootFile: string): Diagnostic {
  if (d.file !== rootFile) return d;
  const source = [...composed.files].reverse().find((f) => f.offset <= d.start) ?? composed.files[0]!;
  const start = Math.min(d.start - source.offset, source.text.length);
  const end = Math.max(start, Math.min(d.end - source.offset, source.text.length));
  const related = (d.related ?? []).map((r) => (r.file === undefined || r.file === rootFile ? relocateRelated(r, composed) : r));
  const chain = chainOf(source).related ?? [];
  const all = [...related, ...chain];
  return { ...d, file: source.file, start, end, ...(all.length ? { related: all } : {}) };
}

function relocateRelated(r: RelatedInfo, composed: ComposedPipeline): RelatedInfo {
  const source = [...composed.files].reverse().find((f) => f.offset <= r.start) ?? composed.files[0]!;
  const start = Math.min(r.start - source.offset, source.text.length);
  return { ...r, file: source.file, start, end: Math.max(start, Math.min(r.end - source.offset, source.text.length)) };
}
