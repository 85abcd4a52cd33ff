/**
 * Format 1 keeps its word: a file that phaseloop accepted as `phaseloop: 1` keeps validating.
 * Rules added since it was first published report what they find as warnings, with their
 * fix, where the run can still behave safely, and the run does then what the fix would
 * write down. This file names those rules' findings once, for validation (the warnings),
 * loading (the implicit bounds) and `phaseloop migrate` (the edits). Pure.
 *
 *  - A cycle that can repeat without passing through the loop head and has no `max_visits`
 *    (UNBOUNDED_CYCLE): the run gives its first phase an implicit `max_visits` of
 *    IMPLICIT_MAX_VISITS per iteration, then stops blocked.
 *  - A tool set's `mcp` allowlist entry naming a server not declared under `mcp`
 *    (UNKNOWN_MCP_SERVER): format 1 first took servers from the agent CLI's own
 *    configuration; phaseloop now starts only the servers it declares, so the entry
 *    allows nothing. (In a file that declares servers under `mcp`, written for them, such
 *    an entry is a mistake, and an error.)
 */
import { mcpEntryServer } from "./mcp-allowlist.ts";
import { IMPLICIT_MAX_VISITS, unboundedCycles } from "./check-cycles.ts";
import type { PipelineDoc } from "./spec.ts";

export { IMPLICIT_MAX_VISITS };

export type CompatFinding =
  | { kind: "unbounded-cycle"; phase: string; cycle: string[]; /** The phase has an `exhausted` rule of its own. */ hasExhausted: boolean }
  | { kind: "undeclared-mcp-server"; toolSet: string; index: number; entry: string; server: string };

/** What the rules added since format 1 find in a (merged) document. */
export function compatFindings(doc: PipelineDoc): CompatFinding[] {
  const out: CompatFinding[] = unboundedCycles(doc).map((cycle) => ({ kind: "unbounded-cycle", phase: cycle[0]!, cycle, hasExhausted: doc.phases[cycle[0]!]?.exhausted !== undefined }));
  const declared = new Set(Object.keys(doc.mcp ?? {}));
  // a file that declares servers was written for the servers phaseloop starts: its misses are errors
  if (declared.size > 0) return out;
  for (const [name, set] of Object.entries(doc.tools ?? {})) {
    if (!Array.isArray(set?.mcp)) continue;
    set.mcp.forEach((entry, index) => {
      if (typeof entry !== "string") return;
      const server = mcpEntryServer(entry);
      if (!declared.has(server)) out.push({ kind: "undeclared-mcp-server", toolSet: name, index, entry, server });
    });
  }
  return out;
}

/** The bound the run applies to each unbounded cycle, written into the document it compiles. */
export function applyImplicitBounds(doc: PipelineDoc, findings: readonly CompatFinding[] = compatFindings(doc)): void {
  for (const f of findings) {
    if (f.kind !== "unbounded-cycle") continue;
    const phase = doc.phases[f.phase];
    if (!phase || typeof phase !== "object") continue;
    phase.max_visits = IMPLICIT_MAX_VISITS;
    phase.exhausted ??= {
      stop: "blocked",
      reason: `phase "${f.phase}" ran ${IMPLICIT_MAX_VISITS} times in one iteration: the cycle ${[...f.cycle, f.phase].join(" → ")} has no max_visits of its own, so phaseloop bounded it`,
    };
  }
}
