/**
 * `phaseloop mcp` on standard input and output: stdout carries the protocol
 * and nothing else (notes go to stderr). When the client goes away (its end
 * of stdin closes) the calls in flight are cancelled and the server ends;
 * the runs it started go on, in processes of their own.
 */
import process from "node:process";
// Deno's type check does not map the SDK's "./*" export to its .d.ts files (Node's does); it runs them alike
// @ts-ignore TS2307 under `deno check` only
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createServer } from "./create-server.ts";

export interface ServeOptions {
  workdir: string;
  env: Record<string, string | undefined>;
  command?: string[];
}

/** Serves until the client leaves; resolves then. */
export async function serveStdio(o: ServeOptions): Promise<void> {
  const gone = new AbortController();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const server = createServer({ ...o, signal: gone.signal, log });
  const transport = new StdioServerTransport();
  const ended = new Promise<void>((resolveEnd) => {
    const leave = () => {
      if (gone.signal.aborted) return;
      gone.abort();
      // answers still being written have nowhere to go: let the calls unwind, then close
      setImmediate(() => void server.close().finally(resolveEnd));
    };
    process.stdin.once("end", leave);
    process.stdin.once("close", leave);
    process.stdin.once("error", leave);
    transport.onclose = () => leave();
    // a client that closes its end of our stdout while we write
    process.stdout.on("error", leave);
  });
  await server.connect(transport);
  await ended;
}
