/**
 * The built-in agent as an MCP client, through the official TypeScript SDK:
 * it starts (or connects to) the phase's servers, lists their tools, offers
 * those the tool set's `mcp` allowlist names as functions (`mcp__SERVER__TOOL`),
 * and carries the model's calls out. A call of any other MCP tool is refused
 * and recorded, like a refused file or command. A server that fails to start
 * fails the phase with its own words (its stderr). Servers end with the phase.
 */
import { Client } from "@modelcontextprotocol/sdk/client";
// Deno's type check does not map the SDK's "./*" export to its .d.ts files (Node's does); it runs them alike
// @ts-ignore TS2307 under `deno check` only
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-ignore TS2307 under `deno check` only
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { ToolDefinition, ToolOutcome } from "./agent-tools.ts";
import { TOOL_OUTPUT_CAP } from "./agent-tools.ts";
import { mcpCallRefusal } from "../../pipeline/mcp-allowlist.ts";
import type { McpServer } from "../../mcp/mcp-server.ts";

export interface McpToolbox {
  definitions: ToolDefinition[];
  /** Whether a function name is an MCP tool's (offered or not). */
  handles(name: string): boolean;
  call(name: string, argumentsJson: string): Promise<ToolOutcome>;
  close(): Promise<void>;
}

/** Starts a server's command in the phase's sandbox, when it has one; `done` once it ended. */
export type McpWrap = (argv: string[], env: Record<string, string>) => Promise<{ argv: string[]; env: Record<string, string>; done(stderr: string): void }>;

export interface McpConnectOptions {
  /** The phase's environment; a stdio server gets it with its own `env` over it. */
  env: Record<string, string | undefined>;
  /** The tool set's `mcp` allowlist; undefined: every tool of the servers. */
  allowlist: readonly string[] | undefined;
  wrap?: McpWrap;
  /** How long a server may take to start and list its tools. */
  startTimeoutMs?: number;
}

export type McpConnectResult = { ok: true; toolbox: McpToolbox } | { ok: false; message: string };

const NAME_OK = /[^A-Za-z0-9_-]/g;

export async function connectMcpServers(servers: readonly McpServer[], options: McpConnectOptions): Promise<McpConnectResult> {
  const open: { client: Client; close: () => Promise<void> }[] = [];
  const byFunction = new Map<string, { client: Client; server: string; tool: string }>();
  const definitions: ToolDefinition[] = [];
  const closeAll = async () => {
    await Promise.all(open.splice(0).map((o) => o.close().catch(() => undefined)));
  };
  for (const server of servers) {
    const client = new Client({ name: "phaseloop", version: "1" });
    let stderr = "";
    let finish: (() => Promise<void>) | undefined;
    try {
      if (server.type === "stdio") {
        const env: Record<string, string> = {};
        for (const [k, v] of Object.entries(options.env)) if (v !== undefined) env[k] = v;
        Object.assign(env, server.env);
        const wrapped = options.wrap ? await options.wrap([server.command, ...server.args], env) : { argv: [server.command, ...server.args], env, done: () => undefined };
        const transport = new StdioClientTransport({ command: wrapped.argv[0]!, args: wrapped.argv.slice(1), env: wrapped.env, cwd: server.cwd, stderr: "pipe" });
        transport.stderr?.on("data", (chunk: Buffer | string) => {
          stderr = (stderr + chunk.toString()).slice(-8_000);
        });
        finish = async () => {
          await client.close();
          wrapped.done(stderr);
        };
        await withTimeout(client.connect(transport), options.startTimeoutMs ?? 60_000, `did not answer within ${Math.round((options.startTimeoutMs ?? 60_000) / 1000)} s`);
      } else {
        const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } });
        finish = () => client.close();
        await withTimeout(client.connect(transport), options.startTimeoutMs ?? 60_000, "did not answer");
      }
      open.push({ client, close: finish });
      const listed = await client.listTools();
      for (const tool of listed.tools) {
        if (mcpCallRefusal(server.name, tool.name, [server.name], options.allowlist)) continue;
        const fn = `mcp__${server.name}__${tool.name}`.replace(NAME_OK, "_").slice(0, 64);
        byFunction.set(fn, { client, server: server.name, tool: tool.name });
        definitions.push({ type: "function", function: { name: fn, description: `${tool.description ?? tool.name} (MCP server ${server.name})`.slice(0, 1000), parameters: (tool.inputSchema as Record<string, unknown>) ?? { type: "object", properties: {} } } });
      }
    } catch (error) {
      await finish?.().catch(() => undefined);
      await closeAll();
      const said = stderr.trim().split("\n").filter((l) => l.trim()).slice(-5).join("\n");
      return { ok: false, message: `MCP server "${server.name}" failed to start: ${said || (error as Error).message}` };
    }
  }
  return {
    ok: true,
    toolbox: {
      definitions,
      handles: (name) => byFunction.has(name) || name.startsWith("mcp__"),
      async call(name, argumentsJson) {
        const target = byFunction.get(name);
        if (!target) return { content: `refused: ${name} is not an MCP tool this step may call`, refused: `${name} is not an MCP tool of the phase's servers allowed by its tool set` };
        let args: Record<string, unknown> = {};
        try {
          const parsed = argumentsJson.trim() ? JSON.parse(argumentsJson) : {};
          if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) args = parsed as Record<string, unknown>;
        } catch {
          return { content: "error: the arguments are not valid JSON" };
        }
        try {
          const result = await target.client.callTool({ name: target.tool, arguments: args });
          const parts = Array.isArray(result.content) ? (result.content as { type: string; text?: string }[]) : [];
          let text = parts.map((p) => (p.type === "text" ? (p.text ?? "") : `[${p.type}]`)).join("\n");
          if (!text && result.structuredContent !== undefined) text = JSON.stringify(result.structuredContent);
          if (result.isError) text = `error: ${text}`;
          return { content: text.length > TOOL_OUTPUT_CAP ? `${text.slice(0, TOOL_OUTPUT_CAP)}\n[cut at ${TOOL_OUTPUT_CAP} characters]` : text };
        } catch (error) {
          return { content: `error: ${(error as Error).message}` };
        }
      },
      close: closeAll,
    },
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(timer));
}
