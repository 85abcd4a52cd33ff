/**
 * Checking a pipeline without running it: a file in the workdir, or YAML
 * text (as if it were a file at the workdir's root, so its relative paths
 * resolve there). The answer is the record `phaseloop validate --json`
 * prints for one file: valid or not, and every diagnostic with its code,
 * message, file, line, column and hint; paths relative to the workdir.
 */
import { dirname, join, relative, sep } from "node:path";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import type { JsonDiagnostic } from "../diagnostics/format-diagnostic.ts";
import { PACKAGE_ROOT } from "./package-recipes.ts";
import { loadPipeline, type ReadHost } from "../pipeline/load-pipeline.ts";
import { readHostOf, type Host, type SourceRead } from "../host/host.ts";
import { nodeHost } from "../host/node-host.ts";
import { documentSandboxModes } from "../machine/sandbox-plan.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { ControlError } from "./control-error.ts";
import { jsonDiagnostics } from "./start-run.ts";
import { isInside, resolveInWorkdir, resolveWorkdir } from "./workdir-path.ts";

export interface PipelineValidation {
  file: string;
  valid: boolean;
  diagnostics: JsonDiagnostic[];
  /** Each phase's OS sandbox mode, for a pipeline that could be read. */
  sandbox?: Record<string, SandboxMode>;
}

/** The name YAML text is validated under: at the workdir's root, so its relative paths resolve there. */
export const TEXT_FILE_NAME = "(pipeline text).yaml";

/** Larger than any pipeline a person writes. */
const TEXT_CAP = 2 * 1024 * 1024;

export async function validatePipeline(workdir: string, source: { path: string } | { text: string }, on: Host = nodeHost): Promise<PipelineValidation> {
  const dir = resolveWorkdir(workdir, undefined, on.files);
  let file: string;
  let host: ReadHost;
  if ("path" in source) {
    file = resolveInWorkdir(dir, source.path, "pipeline", on.files);
    host = readHostOf(on, dir);
  } else {
    if (typeof source.text !== "string" || source.text.trim() === "") throw new ControlError("BAD_ARGUMENT", "the pipeline text is empty");
    if (source.text.length > TEXT_CAP) throw new ControlError("BAD_ARGUMENT", `the pipeline text is longer than ${TEXT_CAP} characters`);
    file = join(dir, TEXT_FILE_NAME);
    const text = source.text;
    // what the text names is read only inside the workdir, or from installed packages (extends, include)
    host = { readFile: async (path) => (path === file ? text : readInside(on, dir, path)), cwd: dir };
  }
  const loaded = await loadPipeline(file, host);
  // paths as the caller named them: relative to the workdir
  const shown = (path: string | null): string | null => (path !== null && isInside(dir, path) ? relative(dir, path) : path);
  return {
    file: shown(loaded.file)!,
    valid: !hasErrors(loaded.diagnostics),
    diagnostics: jsonDiagnostics(loaded.diagnostics, loaded).map((d) => ({ ...d, file: shown(d.file), ...(d.related ? { related: d.related.map((r) => ({ ...r, file: shown(r.file) })) } : {}) })),
    ...(loaded.doc ? { sandbox: documentSandboxModes(loaded.doc) } : {}),
  };
}

function readInside(host: Host, workdir: string, path: string): SourceRead {
  let real: string;
  try {
    real = host.files.realpath(path);
  } catch {
    return host.files.readSource(path); // does not exist: reported as missing
  }
  const inPackage = real.split(sep).includes("node_modules") || isInside(dirname(join(PACKAGE_ROOT, "x")), real);
  if (!isInside(workdir, real) && !inPackage) return { problem: `"${path}" is outside the workdir ${workdir}; pipeline text may name files inside it only` };
  return host.files.readSource(real);
}
