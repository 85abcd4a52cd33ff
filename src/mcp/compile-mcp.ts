/**
 * A phase's MCP servers in each CLI's own form, pure, one function per
 * preset: Claude Code's `--mcp-config` JSON (also what a command agent finds
 * at PHASELOOP_MCP_CONFIG), Gemini CLI's `mcpServers` settings, Codex CLI's
 * `-c mcp_servers.NAME.…` overrides.
 */
import type { McpServer } from "./mcp-server.ts";
import { parseMcpEntry } from "../pipeline/mcp-allowlist.ts";

/** `{"mcpServers": {…}}` as Claude Code reads it from `--mcp-config FILE`. */
export function claudeMcpConfig(servers: readonly McpServer[], workdir: string): string {
  const mcpServers: Record<string, unknown> = {};
  for (const s of servers) {
    if (s.type === "http") {
      mcpServers[s.name] = { type: "http", url: s.url, ...(Object.keys(s.headers).length ? { headers: s.headers } : {}) };
      continue;
    }
    // claude starts servers in its own cwd (the workdir): another cwd is entered by a shell first
    const argv = s.cwd === workdir ? [s.command, ...s.args] : ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", s.cwd, s.command, ...s.args];
    mcpServers[s.name] = { type: "stdio", command: argv[0], args: argv.slice(1), env: s.env };
  }
  return `${JSON.stringify({ mcpServers }, null, 2)}\n`;
}

/** The `mcpServers` of Gemini CLI's settings. */
export function geminiMcpServers(servers: readonly McpServer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of servers) {
    if (s.type === "http") out[s.name] = { httpUrl: s.url, ...(Object.keys(s.headers).length ? { headers: s.headers } : {}) };
    else out[s.name] = { command: s.command, args: s.args, env: s.env, cwd: s.cwd };
  }
  return out;
}

/**
 * `-c` overrides that give codex the phase's servers, and switch off every
 * other server its config layers declare (`others`: the names found there).
 * Where the allowlist names a server's tools exactly, codex enforces it too
 * (`enabled_tools`).
 */
export function codexMcpOverrides(servers: readonly McpServer[], others: readonly string[], allowlist: readonly string[] | undefined): string[] {
  const out: string[] = [];
  const key = (name: string) => `mcp_servers.${/^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name)}`;
  for (const s of servers) {
    const k = key(s.name);
    if (s.type === "http") {
      out.push(`${k}.url=${tomlString(s.url)}`);
      if (Object.keys(s.headers).length) out.push(`${k}.http_headers=${tomlTable(s.headers)}`);
    } else {
      out.push(`${k}.command=${tomlString(s.command)}`, `${k}.args=[${s.args.map(tomlString).join(",")}]`, `${k}.cwd=${tomlString(s.cwd)}`);
      if (Object.keys(s.env).length) out.push(`${k}.env=${tomlTable(s.env)}`);
    }
    // with approval_policy "never" codex refuses every MCP call it would ask about: the phase's own servers are approved, the allowlist decides
    // `required`: a server that fails to start ends codex with its name, instead of a session without its tools
    out.push(`${k}.enabled=true`, `${k}.required=true`, `${k}.default_tools_approval_mode="approve"`);
    if (allowlist) {
      const entries = allowlist.map(parseMcpEntry).filter((e) => e.server === s.name);
      if (!entries.some((e) => e.tool.includes("*"))) out.push(`${k}.enabled_tools=[${entries.map((e) => tomlString(e.tool)).join(",")}]`);
    }
  }
  const mine = new Set(servers.map((s) => s.name));
  for (const name of others) if (!mine.has(name)) out.push(`${key(name)}.enabled=false`);
  return out;
}

function tomlString(s: string): string {
  return JSON.stringify(s);
}

function tomlTable(map: Record<string, string>): string {
  return `{${Object.entries(map).map(([k, v]) => `${JSON.stringify(k)}=${tomlString(v)}`).join(",")}}`;
}
