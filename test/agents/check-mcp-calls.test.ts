import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/agents/agent-adapter.ts";
import { checkMcpCalls, mcpCallTarget } from "../../src/agents/check-mcp-calls.ts";
import { mcpCallRefusal, mcpToolMatches, parseMcpEntry } from "../../src/pipeline/mcp-allowlist.ts";

const call = (mcp: ToolCall["mcp"], extra: Partial<ToolCall> = {}): ToolCall => ({ tool: mcp?.tool ?? "x", kind: "other", paths: [], mcp, ...extra });

describe("the mcp allowlist", () => {
  it("reads server/tool, server/* and a bare server", () => {
    expect(parseMcpEntry("review/comment")).toEqual({ server: "review", tool: "comment" });
    expect(parseMcpEntry("review/*")).toEqual({ server: "review", tool: "*" });
    expect(parseMcpEntry("review")).toEqual({ server: "review", tool: "*" });
    expect(mcpToolMatches("get_*", "get_issue")).toBe(true);
    expect(mcpToolMatches("get_*", "set_issue")).toBe(false);
    expect(mcpToolMatches("a.b", "axb")).toBe(false);
  });

  it("allows a tool of an attached server that the allowlist names; all of them without a tool set", () => {
    expect(mcpCallRefusal("review", "comment", ["review"], ["review/comment"])).toBeUndefined();
    expect(mcpCallRefusal("review", "delete", ["review"], ["review/comment"])).toMatch(/not in the tool set/);
    expect(mcpCallRefusal("review", "delete", ["review"], undefined)).toBeUndefined();
    expect(mcpCallRefusal("other", "x", ["review"], undefined)).toMatch(/not attached/);
    expect(mcpCallRefusal("other", "x", ["review"], ["other/x"])).toMatch(/not attached/);
  });
});

describe("the after-check of MCP calls", () => {
  it("reads claude's and gemini's full names against the attached servers", () => {
    expect(mcpCallTarget(call({ tool: "mcp__my_srv__do_it" }), ["my_srv"])).toEqual({ server: "my_srv", tool: "do_it" });
    expect(mcpCallTarget(call({ tool: "mcp_my_srv_do_it" }), ["my", "my_srv"])).toEqual({ server: "my_srv", tool: "do_it" });
    expect(mcpCallTarget(call({ server: "a", tool: "b" }), [])).toEqual({ server: "a", tool: "b" });
    expect(mcpCallTarget(call(undefined), ["a"])).toBeUndefined();
  });

  it("names each call outside the phase; the CLI's own refusals are left to its denials", () => {
    const calls = [call({ server: "review", tool: "comment" }), call({ server: "review", tool: "delete" }), call({ tool: "mcp__other__x" }), call({ server: "review", tool: "drop" }, { refused: "denied" })];
    const out = checkMcpCalls(calls, ["review"], ["review/comment"]);
    expect(out).toHaveLength(2);
    expect(out[0]).toMatch(/review\/delete is not in the tool set/);
    expect(out[1]).toMatch(/"other" is not attached/);
  });
});
