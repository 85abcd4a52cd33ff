/**
 * A loaded pipeline compiled with its sub-pipelines: each `pipeline:` phase's
 * child (loaded and validated with its parent, load-sub-pipelines.ts) is
 * compiled here too, its own children in turn, and carried in the parent's
 * machine (`machine.children`). A run never reads or compiles a child file
 * again: what `validate` accepted is what runs. Pure.
 */
import { hasErrors, type Diagnostic } from "../diagnostics/diagnostic.ts";
import type { LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { compilePipeline } from "./compile-pipeline.ts";
import type { CompiledChild, Machine, PipelineSources } from "./types.ts";

/**
 * Compile `loaded` and its children. No machine when the pipeline (or a
 * child) has errors; a child's problem stays located in the child's file,
 * with the parent's phase as related span.
 */
export function compileLoaded(loaded: LoadedPipeline): { machine?: Machine; diagnostics: Diagnostic[] } {
  if (!loaded.doc || hasErrors(loaded.diagnostics)) return { diagnostics: [] };
  const compiled = compilePipeline(loaded.doc, { promptFiles: loaded.promptFiles, file: loaded.file });
  if (!compiled.machine) return compiled;
  const diagnostics = [...compiled.diagnostics];
  const children: Record<string, CompiledChild> = {};
  for (const [phase, child] of Object.entries(loaded.children ?? {})) {
    const inner = compileLoaded(child.loaded);
    if (!inner.machine) {
      const at = loaded.locate?.(`/phases/${phase.replace(/~/g, "~0").replace(/\//g, "~1")}/pipeline`) ?? { file: loaded.file, start: 0, end: 0 };
      const note = { file: at.file ?? loaded.file, start: at.start ?? 0, end: at.end ?? 0, message: `run by phase "${phase}" of ${loaded.file}` };
      const problems = inner.diagnostics.length ? inner.diagnostics : [{ code: "INTERNAL" as const, severity: "error" as const, message: `the pipeline of phase "${phase}" cannot be compiled`, file: child.loaded.file, start: 0, end: 0 }];
      diagnostics.push(...problems.map((d) => ({ ...d, related: [...(d.related ?? []), note] })));
      continue;
    }
    children[phase] = { file: child.file, machine: inner.machine, source: sourcesOf(child.loaded) };
  }
  if (hasErrors(diagnostics)) return { diagnostics };
  return { machine: Object.keys(children).length ? { ...compiled.machine, children } : compiled.machine, diagnostics };
}

/** The plain texts a loaded pipeline was read from (no functions: the machine stays data). */
export function sourcesOf(loaded: PipelineSources): PipelineSources {
  return {
    file: loaded.file,
    text: loaded.text,
    promptFiles: loaded.promptFiles,
    ...(loaded.files ? { files: loaded.files } : {}),
    ...(loaded.children ? { children: Object.fromEntries(Object.entries(loaded.children).map(([k, c]) => [k, { file: c.file, loaded: sourcesOf(c.loaded) }])) } : {}),
  };
}
