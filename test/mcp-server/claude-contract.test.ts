/**
 * The real, pinned Claude Code with `phaseloop mcp` attached (--mcp-config,
 * --strict-mcp-config), against the loopback Anthropic API mock: the scripted
 * model validates a pipeline, starts it, waits, answers its question, waits
 * again and reads the run's summary — each step through the CLI's own MCP
 * client, each answer checked in the next request the CLI sends.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI } from "../cli/cli-helpers.ts";
import { agentBinDir, pinnedVersion } from "../agents-contract/agent-bins.ts";
import { claudeEnv } from "../agents-contract/agent-envs.ts";
import { startAnthropicMock, type Turn } from "../agents-contract/anthropic-mock.ts";
import { contractSuite } from "../agents-contract/contract-helpers.ts";
import { ASK, repo } from "../control/control-helpers.ts";

const bin = agentBinDir("@anthropic-ai/claude-code");
const track = contractSuite();

const RUN_ID = /\\?"run_id\\?": ?\\?"(\d{8}-\d{6}-[a-z0-9]{4})/;

/** The text of the last tool result in a request the CLI sent. */
function lastToolResult(body: Record<string, unknown>): string {
  const messages = body.messages as { role: string; content: unknown }[];
  const last = messages.at(-1)!;
  const blocks = Array.isArray(last.content) ? (last.content as { type: string; content?: unknown }[]) : [];
  const result = blocks.find((b) => b.type === "tool_result");
  const text = typeof result?.content === "string" ? result.content : JSON.stringify(result?.content ?? "");
  // the CLI may append reminders of its own after the server's answer
  return text.replace(/\s*<system-reminder>[\s\S]*$/, "");
}

function claude(args: string[], cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(join(bin!, "claude"), args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolveRun({ code, stdout, stderr }));
  });
}

describe.skipIf(bin === undefined)(`Claude Code ${pinnedVersion("@anthropic-ai/claude-code")} with phaseloop mcp attached`, () => {
  it("validates a pipeline, starts it, waits, answers its question and reads the summary", async () => {
    const dir = repo({ "loops/approve.yaml": ASK });
    let runId = "";
    const call = (tool: string, input: Record<string, unknown>): Turn => ({ blocks: [{ text: `Calling ${tool}.` }, { tool, input }] });
    const script = (i: number, body: Record<string, unknown>): Turn => {
      const found = RUN_ID.exec(JSON.stringify(body.messages));
      if (found && !runId) runId = found[1]!;
      switch (i) {
        case 0:
          return call("mcp__phaseloop__validate_pipeline", { path: "loops/approve.yaml" });
        case 1:
          return call("mcp__phaseloop__start_run", { pipeline: "loops/approve.yaml" });
        case 2:
          return call("mcp__phaseloop__wait_for_run", { run_id: runId, timeout_seconds: 50 });
        case 3:
          return call("mcp__phaseloop__answer_question", { run_id: runId, answer: "approve" });
        case 4:
          return call("mcp__phaseloop__wait_for_run", { run_id: runId, timeout_seconds: 50 });
        case 5:
          return call("ReadMcpResourceTool", { server: "phaseloop", uri: `phaseloop://runs/${runId}/summary` });
        default:
          return { blocks: [{ text: "The loop is done: the plan was approved and built." }] };
      }
    };
    const mock = track(await startAnthropicMock(script));
    const config = join(dir, ".phaseloop-mcp.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { phaseloop: { command: process.execPath, args: [CLI, "mcp", "--workdir", dir] } } }));
    const r = await claude(
      ["-p", "Run the approve loop in loops/approve.yaml and approve its plan.", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5", "--mcp-config", config, "--strict-mcp-config", "--allowedTools", "mcp__phaseloop,ReadMcpResourceTool", "--permission-mode", "dontAsk"],
      dir,
      claudeEnv(bin, mock.url),
    );
    expect(r.code, r.stderr + r.stdout.slice(-2000)).toBe(0);
    const result = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { subtype: string; is_error: boolean; permission_denials: unknown[] };
    expect(result).toMatchObject({ subtype: "success", is_error: false, permission_denials: [] });

    const tools = (mock.requests[0]!.tools as { name: string }[]).map((t) => t.name);
    expect(tools).toEqual(expect.arrayContaining(["mcp__phaseloop__validate_pipeline", "mcp__phaseloop__start_run", "mcp__phaseloop__wait_for_run", "mcp__phaseloop__answer_question", "mcp__phaseloop__stop_run", "mcp__phaseloop__resume_run", "mcp__phaseloop__read_run_log", "mcp__phaseloop__get_run", "mcp__phaseloop__list_runs", "mcp__phaseloop__list_recipes"]));
    const results = mock.requests.slice(1).map(lastToolResult);
    expect(JSON.parse(results[0]!)).toMatchObject({ file: "loops/approve.yaml", valid: true });
    expect(runId).toMatch(/^\d{8}-\d{6}-[a-z0-9]{4}$/);
    expect(JSON.parse(results[2]!)).toMatchObject({ end: "question", status: { state: "awaiting answer", question: { phase: "approve" } } });
    expect(JSON.parse(results[3]!)).toMatchObject({ run_id: runId, resumed: true });
    expect(JSON.parse(results[4]!)).toMatchObject({ end: "finished", status: { state: "complete" } });
    expect(results[5]).toContain("complete");
    expect(results[5]).toContain(runId);

    const info = JSON.parse(readFileSync(join(dir, ".phaseloop/runs", runId, "run.json"), "utf8"));
    expect(info.started_via).toBe("mcp");
    expect(readFileSync(join(dir, "built.txt"), "utf8")).toBe("approve");
  }, 180_000);
});
