/**
 * Gemini CLI: `gemini -o stream-json -p ""` reads the prompt from stdin (a
 * non-TTY stdin is the prompt; `-p` text is appended to it). `--approval-mode
 * auto_edit` when the phase may write, `plan` when it may only read.
 */
import type { AgentAdapter, ToolCall } from "./agent-adapter.ts";
import { brief, createStreamParser, num, str, type Decoded, type Ev, type StreamPreset } from "./stream-json.ts";

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

const READS = new Set(["read_file", "read_many_files", "glob", "search_file_content", "grep", "list_directory"]);
const WRITES = new Set(["write_file", "replace", "edit"]);

export const geminiStream: StreamPreset = {
  name: "gemini",
  decode(ev): Decoded | undefined {
    if (ev.type === "init") return { session: str(ev.session_id) };
    if (ev.type === "message" && ev.role === "assistant" && typeof ev.content === "string") return ev.delta ? { textDelta: ev.content } : { text: ev.content };
    if (ev.type === "tool_use") {
      const name = String(ev.tool_name ?? "?");
      const p = (ev.parameters ?? {}) as Ev;
      const paths = [p.file_path, p.absolute_path, p.path, p.dir_path].filter((x): x is string => typeof x === "string" && x !== "");
      const kind: ToolCall["kind"] = name === "run_shell_command" ? "bash" : READS.has(name) ? "read" : WRITES.has(name) ? "write" : "other";
      const call: ToolCall = { tool: name, kind, paths, command: kind === "bash" ? str(p.command) : undefined, search: name === "glob" || name === "search_file_content" || name === "grep" || name === "list_directory" || undefined, id: str(ev.tool_id), input: ev.parameters };
      if (call.search && paths.length === 0) paths.push(".");
      return { tools: [call], display: [`→ ${call.command !== undefined ? `$ ${brief(call.command, 140)}` : `${name} ${paths.join(" ")}`}`] };
    }
    if (ev.type === "tool_result" && ev.status === "error") {
      const err = (ev.error ?? {}) as Ev;
      const reason = str(err.message) ?? str(ev.output) ?? "refused";
      // a call the CLI refused: not registered for this phase, or denied by its policy engine
      if (/tool_not_registered|policy|not (?:allowed|permitted)|denied/i.test(`${str(err.type) ?? ""} ${str(err.message) ?? ""}`)) return { refused: [{ id: str(ev.tool_id), reason }], display: [`✗ refused: ${brief(reason, 120)}`] };
      return { display: [`✗ ${brief(reason, 120)}`] };
    }
    if (ev.type === "result") {
      const stats = (ev.stats ?? {}) as Ev;
      return { usage: { tokens: num(stats.total_tokens), costUsd: 0, total: true }, terminal: true, display: [ev.status === "success" ? "✓ done" : `✗ ${brief(str((ev.error as Ev | undefined)?.message) ?? String(ev.status))}`] };
    }
    return {};
  },
  judge(result) {
    if (!result) return { success: false, error: { class: "agent_error", message: "gemini ended without a result event" } };
    if (result.status === "success") return { success: true };
    const message = String((result.error as Ev | undefined)?.message ?? result.error ?? result.status);
    const transient = /\b(?:429|5\d\d)\b|rate[ -]?limit|quota|overloaded|unavailable/i.test(message);
    return { success: false, error: { class: transient ? "transient" : "agent_error", message: `gemini: ${message}` } };
  },
};

export function createGeminiParser() {
  return createStreamParser(geminiStream);
}
