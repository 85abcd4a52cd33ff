import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { formatDiagnostic, SourceMap, sortDiagnostics, type Colorizer } from "../diagnostics/format-diagnostic.ts";
import type { CliIo } from "./cli-io.ts";

export async function colorizer(io: CliIo): Promise<Colorizer | undefined> {
  if (!io.color) return undefined;
  const { default: kleur } = await import("kleur");
  kleur.enabled = true;
  return { red: kleur.red, yellow: kleur.yellow, cyan: kleur.cyan, bold: kleur.bold, dim: kleur.dim };
}

/** Print diagnostics as `file:line:col: error CODE message` with frames, to stderr; under GitHub Actions also as annotations. */
export async function printDiagnostics(io: CliIo, diagnostics: readonly Diagnostic[], texts: Record<string, string | undefined>): Promise<void> {
  if (diagnostics.length === 0) return;
  const sources = new SourceMap(Object.fromEntries(Object.entries(texts).filter((e): e is [string, string] => e[1] !== undefined)));
  const color = await colorizer(io);
  io.stderr(sortDiagnostics(diagnostics).map((d) => formatDiagnostic(d, sources, { color })).join("\n\n") + "\n");
  if (io.env.GITHUB_ACTIONS === "true") {
    // annotations on the file, line and column in GitHub's checks and pull requests
    const { formatAnnotations } = await import("../reporters/github-actions.ts");
    io.stderr(formatAnnotations(sortDiagnostics(diagnostics), sources, io.env, io.cwd));
  }
}
