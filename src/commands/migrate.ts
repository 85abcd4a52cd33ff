import { hasErrors } from "../diagnostics/diagnostic.ts";
import { loadPipeline, sourceTexts } from "../pipeline/load-pipeline.ts";
import { migratePipelineText } from "../pipeline/migrate-pipeline.ts";
import type { PipelineDoc } from "../pipeline/spec.ts";
import { readHostOf } from "../host/host.ts";
import { hostOf, parseCommandArgs, type CliIo } from "./cli-io.ts";
import { printDiagnostics } from "./print-diagnostics.ts";

const USAGE = `Usage: phaseloop migrate PIPELINE [options]

Writes into a pipeline the fixes for what the rules added since format 1
only warn about, as the run already applies them (docs/format.md, Versions):
  - a cycle without max_visits (UNBOUNDED_CYCLE): max_visits: 10 and
    exhausted: { stop: blocked } on the phase the warning names
  - an mcp allowlist entry naming a server not declared under mcp
    (UNKNOWN_MCP_SERVER): removed, with a comment saying why
Comments and the lines it does not change are kept. What the file inherits
from a base or a catalogue is overridden in the file itself; shared files
are not touched.

Options:
  --write      rewrite PIPELINE in place (without it: the rewritten file on
               stdout, the changes on stderr)
  -h, --help   this text

Exit: 0 (also when there is nothing to change), 2 when the file has errors.
`;

/** `phaseloop migrate PIPELINE [--write]` */
export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--write"], []);
  if (!parsed.ok || parsed.args.positionals.length !== 1) {
    io.stderr(`phaseloop migrate: ${parsed.ok ? "name one pipeline" : parsed.message}\n${USAGE}`);
    return 2;
  }
  const file = parsed.args.positionals[0]!;
  const host = hostOf(io);
  const loaded = await loadPipeline(file, readHostOf(host));
  if (hasErrors(loaded.diagnostics) || !loaded.doc) {
    // what migrate cannot fix is reported as validate reports it
    await printDiagnostics(io, loaded.diagnostics.filter((d) => d.severity === "error"), sourceTexts(loaded));
    io.stderr(`phaseloop migrate: ${file} has errors that migrate does not fix; nothing written\n`);
    return 2;
  }
  const findings = loaded.compat ?? [];
  const migrated = migratePipelineText(loaded.text, findings, (loaded.merged ?? loaded.doc) as PipelineDoc);
  const write = parsed.args.flags.has("--write");
  if (migrated.changes.length === 0) {
    io.stderr(`${file}: nothing to migrate\n`);
    if (!write) io.stdout(loaded.text);
    return 0;
  }
  for (const c of migrated.changes) io.stderr(`${file}: ${c.message}\n`);
  if (write) {
    host.files.writeText(file, migrated.text);
    io.stderr(`${file}: ${migrated.changes.length} change${migrated.changes.length === 1 ? "" : "s"} written\n`);
  } else {
    io.stdout(migrated.text);
  }
  return 0;
}
