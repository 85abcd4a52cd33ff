import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createClaudeParser } from "../../src/agents/presets/claude.ts";
import { createCodexParser } from "../../src/agents/presets/codex.ts";
import { commandAgentWith } from "../../src/agents/command-agent.ts";
import { createGeminiParser } from "../../src/agents/presets/gemini.ts";
import { adaptersOf, getAdapter, presetEffects } from "../../src/agents/get-adapter.ts";
import { nodeHost } from "../../src/host/node-host.ts";
import type { StreamParser } from "../../src/agents/agent-adapter.ts";

/** The adapters on the machine the tests run on. */
const adapters = adaptersOf(presetEffects(nodeHost));
const commandAgent = commandAgentWith(presetEffects(nodeHost));

const claudeAgent = adapters.claude!;
const codexAgent = adapters.codex!;

const feed = (parser: StreamParser, lines: unknown[]) => {
  for (const l of lines) parser.push(typeof l === "string" ? l : JSON.stringify(l));
  return parser.finish("");
};
const input = { prompt: "do it", promptFile: "/tmp/p.md", workdir: "/w", render: (t: string) => t.replace("{{ params.x }}", "X") };

describe("claude", () => {
  it("compiles the tool set to tools that exist, absolute brace-expanded rules and dontAsk, with nothing from the repository", () => {
    const inv = claudeAgent.buildInvocation({ ...input, agent: { preset: "claude", model: "sonnet" }, tools: { read: ["**"], write: ["./src/{a,b}.ts"], bash: ["npm test"], mcp: ["phaseloop/report"] } });
    expect(inv.argv).toContain("--model=sonnet");
    expect(inv.argv).toEqual(expect.arrayContaining(["--setting-sources=", "--strict-mcp-config", "--permission-mode", "dontAsk"]));
    expect(inv.argv).toContain("--tools=Read,Grep,Glob,Edit,Write,NotebookEdit,Bash,mcp__phaseloop__report");
    expect(inv.argv).toContain("--allowedTools=Read(//w/**),Read(//w/src/a.ts),Read(//w/src/b.ts),Edit(//w/src/a.ts),Edit(//w/src/b.ts),Bash(npm test),mcp__phaseloop__report");
    expect(inv.env.CLAUDE_CODE_MAX_RETRIES).toBe("0");
    expect(inv.stdin).toBe("do it");
  });
  it("without a tool set, writes headless inside the workdir (acceptEdits) and may run commands", () => {
    const inv = claudeAgent.buildInvocation({ ...input, agent: { preset: "claude" } });
    expect(inv.argv).toEqual(expect.arrayContaining(["--permission-mode", "acceptEdits"]));
    expect(inv.argv.find((a) => a.startsWith("--allowedTools="))).toContain("Bash");
  });
  const init = { type: "system", subtype: "init", session_id: "s1", model: "sonnet" };
  const text = { type: "assistant", message: { content: [{ type: "text", text: "working\nSTATUS: COMPLETE" }] } };
  it("with --json-schema, keeps the structured answer apart and its own last words as the text", () => {
    const said = { type: "assistant", message: { content: [{ type: "text", text: "Checked.\n<reason>tests pass</reason>\nSTATUS: COMPLETE" }] } };
    const call = { type: "assistant", message: { content: [{ type: "tool_use", id: "t1", name: "StructuredOutput", input: { verdict: "pass" } }] } };
    const r = feed(createClaudeParser(), [init, said, call, { type: "result", subtype: "success", is_error: false, result: '{"verdict":"pass"}', structured_output: { verdict: "pass" }, permission_denials: [] }]);
    expect(r).toMatchObject({ success: true, text: "Checked.\n<reason>tests pass</reason>\nSTATUS: COMPLETE", structured: { verdict: "pass" } });
  });
  it("succeeds on a success result and reads tokens and cost", () => {
    const r = feed(createClaudeParser(), [init, text, { type: "result", subtype: "success", is_error: false, result: "done. STATUS: COMPLETE", total_cost_usd: 0.12, usage: { input_tokens: 100, output_tokens: 20 }, permission_denials: [] }]);
    expect(r).toMatchObject({ success: true, text: "done. STATUS: COMPLETE", tokens: 120, costUsd: 0.12, sessionId: "s1" });
  });
  it("fails on a permission denial even though the result says success (exit 0)", () => {
    const r = feed(createClaudeParser(), [init, { type: "result", subtype: "success", is_error: false, result: "ok", permission_denials: [{ tool_name: "Bash", tool_input: { command: "rm -rf /" } }] }]);
    expect(r.success).toBe(false);
    expect(r.error?.class).toBe("policy_violation");
  });
  it("fails without a result event, and reads the older cost_usd field", () => {
    expect(feed(createClaudeParser(), [init, text]).error?.class).toBe("agent_error");
    expect(feed(createClaudeParser(), [{ type: "result", subtype: "success", is_error: false, result: "", cost_usd: 0.5 }]).costUsd).toBe(0.5);
    expect(feed(createClaudeParser(), [{ type: "result", subtype: "error_during_execution", is_error: true, api_error_status: 529 }]).error?.class).toBe("transient");
  });
});

describe("codex", () => {
  it("decides on the terminal event, not the exit code", () => {
    const ok = feed(createCodexParser(), [{ type: "thread.started", thread_id: "t" }, { type: "item.completed", item: { type: "agent_message", text: "all done" } }, { type: "turn.completed", usage: { input_tokens: 10, output_tokens: 5 } }]);
    expect(ok).toMatchObject({ success: true, text: "all done", tokens: 15, sessionId: "t" });
    const failed = feed(createCodexParser(), [{ type: "turn.started" }, { type: "turn.failed", error: { message: "model error" } }]);
    expect(failed).toMatchObject({ success: false, error: { class: "agent_error" } });
    // codex 0.169's own wording: the status when it gives one, "high demand" for a 5xx
    expect(feed(createCodexParser(), [{ type: "turn.failed", error: { message: "exceeded retry limit, last status: 429 Too Many Requests" } }]).error?.class).toBe("transient");
    expect(feed(createCodexParser(), [{ type: "turn.failed", error: { message: "We’re currently experiencing high demand, which may cause temporary errors." } }]).error?.class).toBe("transient");
    expect(feed(createCodexParser(), [{ type: "turn.failed", error: { message: "unexpected status 401 Unauthorized: Incorrect API key provided" } }]).error).toMatchObject({ class: "agent_error", message: "codex: unexpected status 401 Unauthorized: Incorrect API key provided" });
    expect(feed(createCodexParser(), [{ type: "error", message: "rate limit reached" }]).error?.class).toBe("agent_error");
    expect(feed(createCodexParser(), [{ id: "0", msg: { type: "task_started" } }]).error?.class).toBe("agent_error");
  });
  it("a refusal codex logs only on stderr fails a completed turn as a policy_violation", () => {
    const p = createCodexParser();
    p.push(JSON.stringify({ type: "turn.started" }));
    expect(p.pushStderr?.("2026-11-23T09:30:02.210932Z ERROR codex_core::tools::router: error=patch rejected: writing outside of the project; rejected by user approval settings")).toMatchObject({ display: [expect.stringContaining("refused")] });
    p.push(JSON.stringify({ type: "turn.completed", usage: {} }));
    expect(p.finish("", 0)).toMatchObject({ success: false, error: { class: "policy_violation", message: expect.stringContaining("writing outside of the project") } });
  });
  it("uses a read-only sandbox when the tool set cannot write", () => {
    const inv = codexAgent.buildInvocation({ ...input, agent: { preset: "codex" }, tools: { read: ["**"] } });
    expect(inv.argv).toEqual(expect.arrayContaining(["-s", "read-only"]));
    expect(inv.argv.at(-1)).toBe("-");
  });
});

describe("gemini", () => {
  it("reads messages and the result status", () => {
    const r = feed(createGeminiParser(), [{ type: "init", session_id: "g" }, { type: "message", role: "assistant", content: "hi ", delta: true }, { type: "message", role: "assistant", content: "there", delta: true }, { type: "result", status: "success", stats: { total_tokens: 9 } }]);
    expect(r).toMatchObject({ success: true, text: "hi there", tokens: 9 });
  });

  it("text is the final assistant message, not every turn glued together", () => {
    const r = feed(createGeminiParser(), [
      { type: "message", role: "assistant", content: "I will create src/hello.txt.", delta: true },
      { type: "tool_use", tool_name: "write_file", tool_id: "t1", parameters: { file_path: "src/hello.txt" } },
      { type: "tool_result", tool_id: "t1", status: "success", output: "" },
      { type: "message", role: "assistant", content: "STATUS: ", delta: true },
      { type: "message", role: "assistant", content: "COMPLETE", delta: true },
      { type: "result", status: "success", stats: {} },
    ]);
    expect(r.text).toBe("STATUS: COMPLETE");
  });

  it("reads refused tool calls (not registered, denied by policy) as denials", () => {
    const r = feed(createGeminiParser(), [
      { type: "tool_use", tool_name: "run_shell_command", tool_id: "t1", parameters: { command: "rm -rf /" } },
      { type: "tool_result", tool_id: "t1", status: "error", error: { type: "tool_not_registered", message: "Tool \"run_shell_command\" not found in registry." } },
      { type: "tool_use", tool_name: "read_file", tool_id: "t2", parameters: { file_path: "a" } },
      { type: "tool_result", tool_id: "t2", status: "error", error: { type: "file_not_found", message: "no such file" } },
      { type: "result", status: "success", stats: {} },
    ]);
    expect(r.permissionDenials).toEqual([{ tool: "run_shell_command", input: { command: "rm -rf /" } }]);
  });
});

describe("the command agent", () => {
  it("renders argv element by element and sends the prompt the way it is told", () => {
    expect(commandAgent.buildInvocation({ ...input, agent: { command: ["tool", "{{ params.x }}"] } })).toMatchObject({ argv: ["tool", "X"], stdin: "do it" });
    expect(commandAgent.buildInvocation({ ...input, agent: { command: ["tool"], prompt_via: "arg", prompt_flag: "-p" } })).toMatchObject({ argv: ["tool", "-p", "do it"], stdin: undefined });
    expect(commandAgent.buildInvocation({ ...input, agent: { command: ["tool"], prompt_via: "file" } }).argv).toEqual(["tool", "/tmp/p.md"]);
    expect(getAdapter({ command: ["x"] }, presetEffects(nodeHost)).name).toBe("command");
  });
});

describe("stream parsing", () => {
  it("never throws on garbage lines", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.jsonValue().map((v) => JSON.stringify(v)))), (lines) => {
        for (const make of [createClaudeParser, createCodexParser, createGeminiParser]) {
          const p = make();
          for (const l of lines) p.push(l);
          expect(() => p.finish("")).not.toThrow();
        }
      }),
      { numRuns: 200 },
    );
  });
});
