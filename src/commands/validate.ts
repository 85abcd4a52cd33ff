import { documentSandboxModes } from "../machine/sandbox-plan.ts";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import { SourceMap, sortDiagnostics, toJsonDiagnostic } from "../diagnostics/format-diagnostic.ts";
import { loadPipeline, sourceTexts, type LoadedPipeline } from "../pipeline/load-pipeline.ts";
import { hostOf, parseCommandArgs, type CliIo } from "./cli-io.ts";
import { printDiagnostics } from "./print-diagnostics.ts";
import { readHostOf } from "../host/host.ts";

const USAGE = `Usage: phaseloop validate PIPELINE... [options]

Checks each pipeline (YAML, the schema, and the rules the schema cannot
express) and prints every problem as file:line:col: error CODE message
(docs/diagnostics.md says what each code means).

Options:
  --json       a JSON array, one object per pipeline: {"file","valid",
               "diagnostics","sandbox"}; each diagnostic {"file","line",
               "column","endLine","endColumn","severity","code","message",
               "hint","pointer"}; sandbox: each phase's OS sandbox mode
  --print      print each pipeline as phaseloop reads it: with the files it
               extends and includes merged in (YAML, on stdout)
  -h, --help   this text

Exit: 0 when all are valid (warnings allowed), 2 when any has an error.
`;


/** `phaseloop validate PIPELINE...` */
export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--json", "--print"], []);
  if (!parsed.ok) {
    io.stderr(`phaseloop validate: ${parsed.message}\n${USAGE}`);
    return 2;
  }
  const files = parsed.args.positionals;
  if (files.length === 0) {
    io.stderr(`phaseloop validate: no pipeline given\n${USAGE}`);
    return 2;
  }
  const results: LoadedPipeline[] = [];
  const host = readHostOf(hostOf(io));
  for (const file of files) results.push(await loadPipeline(file, host));
  const failed = results.some((r) => hasErrors(r.diagnostics));
  if (parsed.args.flags.has("--json")) {
    const out = results.map((r) => {
      const sources = new SourceMap(definedOnly(sourceTexts(r)));
      return {
        file: r.file,
        valid: !hasErrors(r.diagnostics),
        diagnostics: sortDiagnostics(r.diagnostics).map((d) => toJsonDiagnostic(d, sources)),
        ...(r.doc ? { sandbox: documentSandboxModes(r.doc) } : {}),
      };
    });
    io.stdout(JSON.stringify(out, null, 2) + "\n");
    return failed ? 2 : 0;
  }
  const print = parsed.args.flags.has("--print");
  for (const r of results) {
    await printDiagnostics(io, r.diagnostics, sourceTexts(r));
    if (print && (r.merged ?? r.doc) !== undefined) {
      const { stringify } = await import("yaml");
      io.stdout(`${results.length > 1 ? `# ${r.file}\n` : ""}${stringify(r.merged ?? r.doc, { lineWidth: 0 })}`);
      continue;
    }
    const errors = r.diagnostics.filter((d) => d.severity === "error").length;
    const warnings = r.diagnostics.length - errors;
    if (errors === 0) io.stdout(`${r.file}: valid${warnings ? ` (${warnings} warning${warnings === 1 ? "" : "s"})` : ""}\n`);
    if (errors === 0 && r.doc) io.stdout(`  OS sandbox: ${Object.entries(documentSandboxModes(r.doc)).map(([phase, mode]) => `${phase} ${mode}`).join(", ")}\n`);
  }
  if (failed) {
    const n = results.reduce((a, r) => a + r.diagnostics.filter((d) => d.severity === "error").length, 0);
    io.stderr(`${n} error${n === 1 ? "" : "s"}\n`);
  }
  return failed ? 2 : 0;
}

function definedOnly(files: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).filter((e): e is [string, string] => e[1] !== undefined));
}
