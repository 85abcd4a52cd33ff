import { hasErrors } from "../diagnostics/diagnostic.ts";
import { compileLoaded } from "../machine/compile-loaded.ts";
import { formatDot, formatMermaid } from "../machine/format-graph.ts";
import type { Expansion } from "../machine/expand-graph.ts";
import type { Machine } from "../machine/types.ts";
import { loadPipeline, sourceTexts } from "../pipeline/load-pipeline.ts";
import { hostOf, parseCommandArgs, type CliIo } from "./cli-io.ts";
import { printDiagnostics } from "./print-diagnostics.ts";
import { readHostOf } from "../host/host.ts";

const USAGE = `Usage: phaseloop graph PIPELINE [options]

Prints the compiled state machine: phases, each rule as an arrow (labelled with
its condition, its label:, or otherwise), outcomes and limits.

Options:
  --format FORMAT   mermaid (the default; renders in GitHub markdown) or dot
                    (Graphviz)
  --expand          draw each sub-pipeline's phases as a subgraph (without it,
                    a sub-pipeline is one node)
  -h, --help        this text
`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    io.stdout(USAGE);
    return 0;
  }
  const parsed = parseCommandArgs(argv, ["--expand"], ["--format"]);
  if (!parsed.ok || parsed.args.positionals.length !== 1) {
    io.stderr(`phaseloop graph: ${parsed.ok ? "give exactly one pipeline" : parsed.message}\n${USAGE}`);
    return 2;
  }
  const format = parsed.args.values.get("--format") ?? "mermaid";
  if (format !== "mermaid" && format !== "dot") {
    io.stderr(`phaseloop graph: unknown format "${format}"; use mermaid or dot\n`);
    return 2;
  }
  const loaded = await loadPipeline(parsed.args.positionals[0]!, readHostOf(hostOf(io)));
  await printDiagnostics(io, loaded.diagnostics, sourceTexts(loaded));
  if (hasErrors(loaded.diagnostics) || !loaded.doc) return 2;
  const compiled = compileLoaded(loaded);
  if (!compiled.machine) {
    await printDiagnostics(io, compiled.diagnostics, sourceTexts(loaded));
    return 2;
  }
  const expand = parsed.args.flags.has("--expand") ? expansionOf(compiled.machine) : undefined;
  io.stdout(format === "dot" ? formatDot(compiled.machine, expand) : formatMermaid(compiled.machine, expand));
  return 0;
}

/** The children compiled with a machine, with theirs. */
function expansionOf(machine: Machine): Expansion {
  const out: Expansion = {};
  for (const [phase, child] of Object.entries(machine.children ?? {})) out[phase] = { machine: child.machine, children: expansionOf(child.machine) };
  return out;
}
