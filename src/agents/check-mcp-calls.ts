/**
 * The after-check of MCP tool calls, shared by every preset: a call of a
 * tool of a server the phase did not attach, or of a tool its tool set's
 * `mcp` allowlist does not name, is a policy violation whether the CLI let
 * it through or not. Pure.
 */
import type { ToolCall } from "./agent-adapter.ts";
import { mcpCallRefusal } from "../pipeline/mcp-allowlist.ts";

/**
 * The server and tool of an MCP call. CLIs that name only the full tool name
 * (`mcp__S__T` for claude, `mcp_S_T` for gemini) are read against the
 * attached servers, the longest name first.
 */
export function mcpCallTarget(call: ToolCall, attached: readonly string[]): { server: string; tool: string } | undefined {
  if (!call.mcp) return undefined;
  if (call.mcp.server !== undefined) return { server: call.mcp.server, tool: call.mcp.tool };
  const full = call.mcp.tool;
  for (const s of [...attached].sort((a, b) => b.length - a.length)) {
    for (const prefix of [`mcp__${s}__`, `mcp_${s}_`]) if (full.startsWith(prefix)) return { server: s, tool: full.slice(prefix.length) };
  }
  const m = /^mcp__([^_]+(?:_[^_]+)*)__(.+)$/.exec(full) ?? /^mcp_([^_]+)_(.+)$/.exec(full);
  return m ? { server: m[1]!, tool: m[2]! } : { server: "?", tool: full };
}

/** One line per MCP call outside the phase (at most 20); calls the CLI refused are its own denials. */
export function checkMcpCalls(calls: readonly ToolCall[], attached: readonly string[], allowlist: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const call of calls) {
    if (call.refused || out.length >= 20) continue;
    const target = mcpCallTarget(call, attached);
    if (!target) continue;
    const why = mcpCallRefusal(target.server, target.tool, attached, allowlist);
    if (why) out.push(`${call.tool} was called: ${why}`);
  }
  return out;
}
