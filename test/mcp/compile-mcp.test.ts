import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parse as parseToml } from "smol-toml";
import { claudeMcpConfig } from "../../src/agents/presets/claude.ts";
import { codexMcpOverrides } from "../../src/agents/presets/codex.ts";
import { mcpHosts, phaseMcpServers, type McpServer } from "../../src/mcp/mcp-server.ts";
import { geminiConfig, geminiMcpServers, NO_MCP_SERVER } from "../../src/agents/presets/gemini.ts";

const review: McpServer = { name: "review", type: "stdio", command: "node", args: ["tools/review.mjs", "--x"], env: { TOKEN: "s3cr\"et" }, cwd: "/w" };
const docs: McpServer = { name: "docs", type: "http", url: "http://127.0.0.1:8808/mcp", headers: { Authorization: "Bearer t" } };

describe("a phase's MCP servers", () => {
  it("are the declared servers it names, templates rendered, a relative program and cwd made absolute", () => {
    const declared = {
      review: { command: ["./bin/srv", "{{ x }}"], env: { TOKEN: "{{ x }}" }, cwd: "tools" },
      docs: { url: "http://{{ x }}:9/mcp" },
      unused: { command: ["node"] },
    };
    const render = (t: string) => t.replace("{{ x }}", "X");
    expect(phaseMcpServers(["docs", "review", "missing"], declared, "/w", render)).toEqual([
      { name: "docs", type: "http", url: "http://X:9/mcp", headers: {} },
      { name: "review", type: "stdio", command: "/w/tools/bin/srv", args: ["X"], env: { TOKEN: "X" }, cwd: "/w/tools" },
    ]);
    expect(phaseMcpServers(undefined, declared, "/w", render)).toEqual([]);
  });

  it("an HTTP server's host and port are hosts the sandbox lets through", () => {
    expect(mcpHosts([review, docs, { ...docs, url: "https://Example.com/mcp" }, { ...docs, url: "http://[::1]:81/x" }])).toEqual(["127.0.0.1:8808", "example.com:443", "[::1]:81"]);
  });
});

describe("claude", () => {
  it("gets an --mcp-config file of exactly the phase's servers", () => {
    const config = JSON.parse(claudeMcpConfig([review, docs], "/w"));
    expect(config).toEqual({
      mcpServers: {
        review: { type: "stdio", command: "node", args: ["tools/review.mjs", "--x"], env: { TOKEN: 's3cr"et' } },
        docs: { type: "http", url: "http://127.0.0.1:8808/mcp", headers: { Authorization: "Bearer t" } },
      },
    });
  });

  it("a server with its own cwd is started there through a shell", () => {
    const config = JSON.parse(claudeMcpConfig([{ ...review, cwd: "/w/tools" }], "/w")) as { mcpServers: { review: { command: string; args: string[] } } };
    expect(config.mcpServers.review.command).toBe("/bin/sh");
    expect(config.mcpServers.review.args.slice(3)).toEqual(["/w/tools", "node", "tools/review.mjs", "--x"]);
  });
});

describe("gemini", () => {
  it("gets the servers in its system settings and only their names may start", () => {
    expect(geminiMcpServers([review, docs])).toEqual({
      review: { command: "node", args: ["tools/review.mjs", "--x"], env: { TOKEN: 's3cr"et' }, cwd: "/w" },
      docs: { httpUrl: "http://127.0.0.1:8808/mcp", headers: { Authorization: "Bearer t" } },
    });
    const c = geminiConfig({ read: ["**"], mcp: ["review/comment", "other/x"] }, [review]);
    expect(c.mcpServers).toEqual(["review"]);
    expect(JSON.parse(c.settings).mcpServers).toEqual(geminiMcpServers([review]));
    expect(c.policy).toContain('toolName = "mcp_review_comment"');
    // a server the phase did not attach gets no rule, and does not start
    expect(c.policy).not.toContain("mcp_other");
    expect(geminiConfig({ read: ["**"], mcp: ["review/*"] }).mcpServers).toEqual([NO_MCP_SERVER]);
  });

  it("without a tool set every tool of an attached server is allowed", () => {
    const c = geminiConfig(undefined, [review]);
    expect(c.policy).toContain('toolName = "mcp_review_*"');
    expect(c.mcpServers).toEqual(["review"]);
  });
});

describe("codex", () => {
  const parse = (overrides: string[]) => {
    // each `-c key=value` as codex reads it: a dotted key, a TOML value
    const doc: Record<string, unknown> = {};
    for (const o of overrides) {
      const eq = o.indexOf("=");
      const path = o.slice(0, eq).split(".");
      const value = (parseToml(`v = ${o.slice(eq + 1)}`) as { v: unknown }).v;
      let at = doc;
      for (const k of path.slice(0, -1)) at = (at[k] ??= {}) as Record<string, unknown>;
      at[path[path.length - 1]!] = value;
    }
    return doc;
  };

  it("gets -c mcp_servers overrides for the phase's servers, and every server of its own config switched off", () => {
    const doc = parse(codexMcpOverrides([review, docs], ["mine", "review"], ["review/comment", "docs/*"]));
    expect(doc).toEqual({
      mcp_servers: {
        review: { command: "node", args: ["tools/review.mjs", "--x"], cwd: "/w", env: { TOKEN: 's3cr"et' }, enabled: true, required: true, default_tools_approval_mode: "approve", enabled_tools: ["comment"] },
        docs: { url: "http://127.0.0.1:8808/mcp", http_headers: { Authorization: "Bearer t" }, enabled: true, required: true, default_tools_approval_mode: "approve" },
        mine: { enabled: false },
      },
    });
  });

  it("every value survives the TOML round trip", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.array(fc.string(), { maxLength: 4 }), (command, value, args) => {
        const doc = parse(codexMcpOverrides([{ ...review, command, args, env: { K: value } }], [], undefined)) as { mcp_servers: { review: { command: string; args: string[]; env: { K: string } } } };
        expect(doc.mcp_servers.review).toMatchObject({ command, args, env: { K: value } });
      }),
    );
  });
});
