import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client";
// Deno's type check does not map the SDK's "./*" export to its .d.ts files (Node's does); it runs them alike
// @ts-ignore TS2307 under `deno check` only
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CLI } from "../cli/cli-helpers.ts";

export interface Connected {
  client: Client;
  /** The server's process id. */
  pid: number;
  /** Calls a tool; the result as the client got it. */
  call(name: string, args?: Record<string, unknown>, options?: Parameters<Client["callTool"]>[2]): Promise<ToolResult>;
  close(): Promise<void>;
}

export interface ToolResult {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { type: string; text?: string }[];
}

/**
 * `phaseloop mcp --workdir DIR` started by the SDK's own stdio client, as an
 * agent starts it: with the SDK's default environment only (HOME, LOGNAME,
 * PATH, SHELL, TERM, USER).
 */
export async function connect(workdir: string): Promise<Connected> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp", "--workdir", workdir], stderr: "pipe" });
  const client = new Client({ name: "phaseloop-test", version: "1.0.0" });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid as number,
    call: async (name, args = {}, options) => (await client.callTool({ name, arguments: args }, undefined, options)) as ToolResult,
    close: () => client.close(),
  };
}

export function errorOf(result: ToolResult): { code: string; message: string; hint?: string; diagnostics?: Record<string, unknown>[] } {
  if (!result.isError) throw new Error(`expected an error, got ${JSON.stringify(result.structuredContent).slice(0, 300)}`);
  return (result.structuredContent as { error: { code: string; message: string } }).error;
}

export function valueOf<T = Record<string, unknown>>(result: ToolResult): T {
  if (result.isError) throw new Error(`expected a result, got ${result.content[0]?.text}`);
  return result.structuredContent as T;
}
