/**
 * MCP servers are declared once, under `mcp`: every server a phase attaches
 * (`mcp: [NAME]`) and every server a tool set's `mcp` allowlist names
 * (`server/tool`, `server/*`) must be one of them (for an allowlist, a warning:
 * format 1 accepted servers configured in the agent CLI itself).
 */
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import { didYouMean } from "../diagnostics/did-you-mean.ts";
import { mcpEntryServer } from "../mcp/mcp-allowlist.ts";
import { diag, esc, type RuleContext } from "./rule-context.ts";
import { PRESETS, presetNamed } from "./presets/registry.ts";

export function checkMcp(ctx: RuleContext): Diagnostic[] {
  const { doc } = ctx;
  const declared = Object.keys(doc.mcp ?? {});
  const out: Diagnostic[] = [];
  const unknown = (name: string, pointer: string, what: string) => {
    if (declared.includes(name)) return;
    out.push(diag(ctx, "UNKNOWN_MCP_SERVER", pointer, `${what} "${name}", which is not declared under mcp`, { hint: didYouMean(name, declared) ?? (declared.length ? `mcp servers: ${declared.join(", ")}` : `declare it: mcp: { ${name}: { command: [...] } }`) }));
  };
  for (const [name, phase] of Object.entries(doc.phases ?? {})) {
    if (!Array.isArray(phase?.mcp)) continue;
    phase.mcp.forEach((server, i) => {
      if (typeof server === "string") unknown(server, `/phases/${esc(name)}/mcp/${i}`, "unknown MCP server");
    });
    // a preset without an MCP client (aider): the servers would silently not be there
    const agent = typeof phase.agent === "string" ? doc.agents?.[phase.agent] : undefined;
    const preset = agent?.command === undefined ? presetNamed(agent?.preset) : undefined;
    if (phase.mcp.length > 0 && preset?.mcp === false) {
      const clients = PRESETS.filter((p) => p.mcp).map((p) => p.name);
      out.push(diag(ctx, "MCP_UNSUPPORTED", `/phases/${esc(name)}/mcp`, `agent "${phase.agent}" (preset ${preset.name}) cannot take MCP servers: ${preset.name} has no MCP client`, { hint: `attach them to a phase of a ${clients.slice(0, -1).join(", ")} or ${clients[clients.length - 1]} agent, or of a command agent (PHASELOOP_MCP_CONFIG)` }));
    }
  }
  // format 1 as first published took a tool set's servers from the agent CLI's own
  // configuration: in a file that declares none, such an entry still validates, as a
  // warning (see compat-v1.ts); in one that declares servers it is a mistake
  // (a typo, most often)
  for (const [name, set] of Object.entries(doc.tools ?? {})) {
    if (!Array.isArray(set?.mcp)) continue;
    set.mcp.forEach((entry, i) => {
      if (typeof entry !== "string") return;
      const server = mcpEntryServer(entry);
      if (declared.includes(server)) return;
      if (declared.length > 0) return unknown(server, `/tools/${esc(name)}/mcp/${i}`, "the tool set allows tools of MCP server");
      out.push({
        ...diag(ctx, "UNKNOWN_MCP_SERVER", `/tools/${esc(name)}/mcp/${i}`, `the tool set allows tools of MCP server "${server}", which is not declared under mcp: phaseloop starts only the servers it declares, so "${entry}" allows nothing`, {
          hint: `${didYouMean(server, declared) ?? `declare it: mcp: { ${server}: { command: [...] } } and attach it to the phase (mcp: [${server}])`}; or remove the entry (\`phaseloop migrate FILE --write\` does)`,
        }),
        severity: "warning",
      });
    });
  }
  return out;
}
