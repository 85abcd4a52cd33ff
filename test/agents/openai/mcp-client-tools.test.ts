import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { describe, expect, it } from "vitest";
import { connectMcpServers } from "../../../src/agents/openai/mcp-client-tools.ts";
import type { McpServer } from "../../../src/mcp/mcp-server.ts";

const SERVER = resolve("test/fixtures/mcp/stamp-server.mjs");
const stamp = (env: Record<string, string>): McpServer => ({ name: "stamp", type: "stdio", command: process.execPath.endsWith("deno") ? "node" : process.execPath, args: [SERVER], env, cwd: process.cwd() });

describe("the built-in agent's MCP client", () => {
  it("offers the allowed tools as functions, calls them, refuses the others, and ends the server", async () => {
    const marker = join(mkdtempSync(join(tmpdir(), "phaseloop-mcp-client-")), "m.log");
    const r = await connectMcpServers([stamp({ STAMP_MARKER: marker, TOKEN: "t" })], { env: { PATH: process.env.PATH }, allowlist: ["stamp/stamp"] });
    if (!r.ok) throw new Error(r.message);
    expect(r.toolbox.definitions.map((d) => d.function.name)).toEqual(["mcp__stamp__stamp"]);
    expect(await r.toolbox.call("mcp__stamp__stamp", '{"text":"hi"}')).toEqual({ content: "stamped: hi" });
    expect((await r.toolbox.call("mcp__stamp__erase", "{}")).refused).toBeDefined();
    expect(r.toolbox.handles("mcp__other__x")).toBe(true);
    expect(r.toolbox.handles("read_file")).toBe(false);
    await r.toolbox.close();
    const log = readFileSync(marker, "utf8");
    expect(log).toContain('called stamp {"text":"hi"} token=t');
    expect(log).not.toContain("erase");
    const pid = Number(/started pid=(\d+)/.exec(log)![1]);
    expect(() => process.kill(pid, 0)).toThrow();
  }, 30_000);

  it("a server that fails to start is reported in its own words", async () => {
    const r = await connectMcpServers([stamp({ STAMP_FAIL: "no pad" })], { env: { PATH: process.env.PATH }, allowlist: undefined });
    expect(r).toEqual({ ok: false, message: 'MCP server "stamp" failed to start: stamp server: no pad' });
  }, 30_000);
});
