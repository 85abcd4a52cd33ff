import { describe, expect, it } from "vitest";
import { createClaudeParser } from "../../src/agents/presets/claude.ts";
import { createCodexParser } from "../../src/agents/presets/codex.ts";
import type { StreamParser } from "../../src/agents/agent-adapter.ts";

const feed = (p: StreamParser, events: unknown[]) => {
  for (const e of events) p.push(JSON.stringify(e));
  return p.finish("");
};

// the commands an agent ran, which loops carry into the next iteration's prompt
describe("the shell commands an agent ran", () => {
  it("are read from Claude's Bash tool calls", () => {
    const r = feed(createClaudeParser(), [
      { type: "assistant", message: { content: [{ type: "tool_use", name: "Bash", input: { command: "npm test" } }, { type: "tool_use", name: "Read", input: { file_path: "a" } }] } },
      { type: "assistant", message: { content: [{ type: "tool_use", name: "Bash", input: { command: "git diff --stat" } }] } },
      { type: "result", subtype: "success", is_error: false, result: "ok", permission_denials: [] },
    ]);
    expect(r.commands).toEqual(["npm test", "git diff --stat"]);
  });
  it("are read from Codex's completed command executions, once each", () => {
    const r = feed(createCodexParser(), [
      { type: "item.updated", item: { type: "command_execution", command: "npm test" } },
      { type: "item.completed", item: { type: "command_execution", command: "npm test" } },
      { type: "turn.completed", usage: {} },
    ]);
    expect(r.commands).toEqual(["npm test"]);
  });
  it("are at most 50, each cut at 300 characters", () => {
    const long = "x".repeat(400);
    const r = feed(createClaudeParser(), [...Array.from({ length: 60 }, () => ({ type: "assistant", message: { content: [{ type: "tool_use", name: "Bash", input: { command: long } }] } })), { type: "result", subtype: "success", is_error: false, result: "" }]);
    expect(r.commands).toHaveLength(50);
    expect(r.commands![0]).toHaveLength(300);
  });
});
