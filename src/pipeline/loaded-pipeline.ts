/**
 * What loading a pipeline gives back (the document, every problem found, the files it came
 * from, its sub-pipelines loaded alike) and what it needs from the world to read files.
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { CompatFinding } from "./compat-v1.ts";
import type { SourceFile } from "./resolve-extends.ts";
import type { PipelineDoc } from "./spec.ts";

export interface LoadedPipeline {
  /** The pipeline file, as given. */
  file: string;
  text: string;
  /** The document, when it passed the schema (semantic errors may remain: check diagnostics). */
  doc?: PipelineDoc;
  diagnostics: Diagnostic[];
  /** Prompt files by resolved path (undefined when missing). */
  promptFiles: Record<string, string | undefined>;
  /** The pipeline file and every file it extends or includes, the pipeline first. */
  files?: SourceFile[];
  /** The merged document as data, when the pipeline extends or includes other files. */
  merged?: unknown;
  /** Where the value at a JSON pointer of the merged document was written: its file, span and the chain of files (a pipeline that extends or includes). */
  locate?: (pointer: string) => Pick<Diagnostic, "file" | "start" | "end" | "related">;
  /** What the rules added since format 1 found, as warnings (before the run's implicit bounds were applied to `doc`). */
  compat?: CompatFinding[];
  /** Sub-pipelines by the phase that runs them, each loaded and validated (its problems are in `diagnostics` too). */
  children?: Record<string, SubPipeline>;
}

/** A child pipeline as its parent's phase names it. */
export interface SubPipeline {
  /** The child file, resolved (relative to the current directory, or absolute). */
  file: string;
  loaded: LoadedPipeline;
}

/** What loading needs from the world: reading a file (undefined when it does not exist). */
export interface ReadHost {
  /** `problem`: the file exists but cannot be a pipeline or prompt (a FIFO, a device, too large). */
  readFile(path: string): Promise<string | undefined | { problem: string }>;
  /** The current directory (absolute): packages named by `extends:` are looked up from it upward. */
  cwd?: string;
}
