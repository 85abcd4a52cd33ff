import type { AgentAdapter, AgentRunReport, StreamParser } from "./agent-adapter.ts";

type Ev = Record<string, unknown>;
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * Gemini CLI: `gemini -o stream-json -p ""` reads the prompt from stdin (a
 * non-TTY stdin is the prompt; `-p` text is appended to it). `--approval-mode
 * auto_edit` when the phase may write, `plan` when it may only read.
 */
export const geminiAgent: AgentAdapter = {
  name: "gemini",
  versionArgv: ["gemini", "--version"],
  buildInvocation(input) {
    const writes = (input.tools?.write ?? []).length > 0 || !input.tools;
    const argv = ["gemini", "-o", "stream-json", "--approval-mode", writes ? "auto_edit" : "plan"];
    if (input.agent.model) argv.push("-m", input.agent.model);
    argv.push(...(input.agent.args ?? []).map(input.render), "-p", "");
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "gemini-stream-json" };
  },
  createParser: createGeminiParser,
};

export function createGeminiParser(): StreamParser {
  let result: Ev | undefined;
  let text = "";
  let events = 0;
  let lastLine: string | undefined;
  let sessionId: string | undefined;
  // a tool call ends the assistant's turn: the next message starts the final text afresh
  let turnEnded = false;
  const denials: { tool: string; input?: unknown }[] = [];
  const calls = new Map<string, { tool: string; input?: unknown }>();
  return {
    push(line) {
      let ev: Ev;
      try {
        ev = JSON.parse(line) as Ev;
      } catch {
        return;
      }
      if (!ev || typeof ev !== "object") return;
      events++;
      if (ev.type === "init" && typeof ev.session_id === "string") sessionId = ev.session_id;
      if (ev.type === "message" && ev.role === "assistant" && typeof ev.content === "string") {
        text = ev.delta && !turnEnded ? text + ev.content : ev.content;
        turnEnded = false;
        lastLine = text.trim().split("\n").pop();
      }
      if (ev.type === "tool_use") {
        turnEnded = true;
        if (typeof ev.tool_id === "string") calls.set(ev.tool_id, { tool: String(ev.tool_name), input: ev.parameters });
        lastLine = `${String(ev.tool_name)} ${JSON.stringify(ev.parameters ?? {}).slice(0, 80)}`;
      }
      if (ev.type === "tool_result") {
        turnEnded = true;
        // a call the CLI refused (not registered for this phase, or denied by its policy engine) is a denial
        const err = (ev.error ?? {}) as Ev;
        const kind = `${String(err.type ?? "")} ${String(err.message ?? "")}`;
        if (ev.status === "error" && /tool_not_registered|policy|not (?:allowed|permitted)|denied/i.test(kind) && denials.length < 50) {
          denials.push(calls.get(String(ev.tool_id)) ?? { tool: String(ev.tool_id ?? "unknown") });
        }
      }
      if (ev.type === "result") result = ev;
    },
    finish(): AgentRunReport {
      const stats = (result?.stats ?? {}) as Ev;
      const base = { text, tokens: num(stats.total_tokens), costUsd: 0, sessionId, permissionDenials: denials, lastLine, events };
      if (!result) return { ...base, success: false, error: { class: "agent_error", message: "gemini ended without a result event" } };
      if (result.status === "success") return { ...base, success: true };
      const message = String((result.error as Ev | undefined)?.message ?? result.error ?? result.status);
      const transient = /\b(?:429|5\d\d)\b|rate[ -]?limit|quota|overloaded|unavailable/i.test(message);
      return { ...base, success: false, error: { class: transient ? "transient" : "agent_error", message: `gemini: ${message}` } };
    },
  };
}
