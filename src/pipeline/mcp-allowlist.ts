/**
 * A tool set's `mcp` allowlist (`server/tool`, `server/*`, or `server` for
 * all its tools) and the question every preset asks afterwards: may this
 * call of a server's tool happen in this phase? Only tools of servers the
 * phase attached, and only those the allowlist names (all of them when the
 * phase has no tool set). Pure.
 */

/** The server an allowlist entry names. */
export function mcpEntryServer(entry: string): string {
  const slash = entry.indexOf("/");
  return slash < 0 ? entry : entry.slice(0, slash);
}

/** An allowlist entry as server and tool pattern ("*" for every tool). */
export function parseMcpEntry(entry: string): { server: string; tool: string } {
  const slash = entry.indexOf("/");
  return slash < 0 ? { server: entry, tool: "*" } : { server: entry.slice(0, slash), tool: entry.slice(slash + 1) || "*" };
}

/** Whether a tool pattern (`*` any run of characters) matches a tool name. */
export function mcpToolMatches(pattern: string, tool: string): boolean {
  if (pattern === "*") return true;
  if (!pattern.includes("*")) return pattern === tool;
  const re = new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
  return re.test(tool);
}

/**
 * Why a call of `server`'s `tool` is outside the phase, or undefined when it
 * may happen. `allowlist` is the tool set's `mcp` (undefined: no tool set,
 * every tool of an attached server may be called).
 */
export function mcpCallRefusal(server: string, tool: string, attached: readonly string[], allowlist: readonly string[] | undefined): string | undefined {
  if (!attached.includes(server)) return `MCP server "${server}" is not attached to the phase`;
  if (allowlist === undefined) return undefined;
  const ok = allowlist.map(parseMcpEntry).some((e) => e.server === server && mcpToolMatches(e.tool, tool));
  return ok ? undefined : `MCP tool ${server}/${tool} is not in the tool set's mcp allowlist`;
}
