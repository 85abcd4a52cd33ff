import { describe, expect, it } from "vitest";
import { createClaudeParser } from "../../src/agents/presets/claude.ts";

const init = (status: string) => ({ type: "system", subtype: "init", session_id: "s", model: "m", mcp_servers: [{ name: "web", status }] });
const call = { type: "assistant", message: { content: [{ type: "tool_use", id: "t1", name: "mcp__web__stamp", input: { text: "x" } }] } };
const answer = (isError: boolean) => ({ type: "user", message: { content: [{ type: "tool_result", tool_use_id: "t1", is_error: isError, content: "Stamped." }] } });
const result = { type: "result", subtype: "success", is_error: false, result: "done", session_id: "s", usage: { input_tokens: 1, output_tokens: 1 }, total_cost_usd: 0 };

const judge = (events: unknown[]) => {
  const p = createClaudeParser();
  for (const e of events) p.push(JSON.stringify(e));
  return p.finish("", 0);
};

describe("an MCP server claude reports failed at start", () => {
  it("fails the phase when nothing of it answered", () => {
    expect(judge([init("failed"), result])).toMatchObject({ success: false, error: { class: "agent_error", message: expect.stringContaining('MCP server "web" failed to start') } });
  });

  it("fails the phase when its one call came back as an error", () => {
    expect(judge([init("failed"), call, answer(true), result])).toMatchObject({ success: false });
  });

  it("does not fail the phase once a call of its tools came back (it connected late)", () => {
    expect(judge([init("failed"), call, answer(false), result])).toMatchObject({ success: true });
  });

  it("a connected server is no failure", () => {
    expect(judge([init("connected"), result])).toMatchObject({ success: true });
  });
});
