import type { AgentAdapter, AgentRunReport, StreamParser } from "./agent-adapter.ts";
import { claudeAllowedTools } from "./tool-flags.ts";

type Ev = Record<string, unknown>;
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * Claude Code headless: `claude -p --output-format stream-json --verbose`, the
 * prompt on stdin, `--permission-mode dontAsk` with the allowlist translated
 * into `--allowedTools=…` (the `=` form, so values never swallow the prompt).
 * Success is the result event's `subtype == "success"` and `!is_error` with no
 * permission denials: a denied required tool still exits 0.
 */
export const claudeAgent: AgentAdapter = {
  name: "claude",
  versionArgv: ["claude", "--version"],
  buildInvocation(input) {
    // no settings file and no MCP server of the repository or the user: a
    // `.claude/settings.local.json` allowing Bash(node:*) would otherwise widen
    // the phase's tool set (Claude Code 2.1.197 merges them into --allowedTools)
    const argv = ["claude", "-p", "--output-format", "stream-json", "--verbose", "--setting-sources=", "--strict-mcp-config"];
    if (input.agent.model) argv.push(`--model=${input.agent.model}`);
    const allowed = claudeAllowedTools(input.tools, input.render);
    if (input.tools) {
      argv.push("--permission-mode", "dontAsk");
      if (allowed.length) argv.push(`--allowedTools=${allowed.join(",")}`);
    }
    argv.push(...(input.agent.args ?? []).map(input.render));
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "claude-stream-json" };
  },
  createParser: createClaudeParser,
};

export function createClaudeParser(): StreamParser {
  let result: Ev | undefined;
  let lastText = "";
  let lastLine: string | undefined;
  let events = 0;
  let sessionId: string | undefined;
  const commands: string[] = [];
  return {
    push(line) {
      let ev: Ev;
      try {
        ev = JSON.parse(line) as Ev;
      } catch {
        return; // not an event: stray output
      }
      if (!ev || typeof ev !== "object") return;
      events++;
      if (typeof ev.session_id === "string") sessionId = ev.session_id;
      if (ev.type === "assistant") {
        const content = ((ev.message as Ev | undefined)?.content ?? []) as Ev[];
        if (Array.isArray(content)) {
          for (const c of content) {
            if (c?.type === "text" && typeof c.text === "string") {
              lastText = c.text;
              lastLine = c.text.trim().split("\n").pop();
            } else if (c?.type === "tool_use") {
              lastLine = `${String(c.name)} ${JSON.stringify(c.input ?? {}).slice(0, 80)}`;
              const command = (c.input as Ev | undefined)?.command;
              if (c.name === "Bash" && typeof command === "string" && commands.length < 50) commands.push(command.slice(0, 300));
            }
          }
        }
      }
      if (ev.type === "result") result = ev;
    },
    finish(): AgentRunReport {
      if (!result) {
        return { text: lastText, success: false, error: { class: "agent_error", message: "the agent ended without a result event" }, tokens: 0, costUsd: 0, sessionId, permissionDenials: [], lastLine, events };
      }
      const usage = (result.usage ?? {}) as Ev;
      const tokens = num(usage.input_tokens) + num(usage.output_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens);
      const costUsd = num(result.total_cost_usd) || num(result.cost_usd);
      const denials = (Array.isArray(result.permission_denials) ? result.permission_denials : []) as Ev[];
      const permissionDenials = denials.map((d) => ({ tool: String(d.tool_name ?? "?"), input: d.tool_input }));
      const text = typeof result.result === "string" ? result.result : lastText;
      const ok = result.subtype === "success" && result.is_error !== true;
      let error: AgentRunReport["error"];
      const status = num(result.api_error_status);
      if (!ok) {
        const transient = status === 429 || status === 529 || status >= 500;
        error = { class: transient ? "transient" : "agent_error", message: `claude: ${String(result.subtype ?? "error")}${status ? ` (HTTP ${status})` : ""}` };
      } else if (permissionDenials.length > 0) {
        error = { class: "policy_violation", message: `claude was denied ${permissionDenials.map((d) => d.tool).join(", ")}` };
      }
      return { text, success: ok && !error, error, tokens, costUsd, sessionId, permissionDenials, commands, lastLine, events };
    },
  };
}
