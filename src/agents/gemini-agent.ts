/**
 * Gemini CLI: `gemini -o stream-json -p ""` reads the prompt from stdin (a
 * non-TTY stdin is the prompt; `-p` text is appended to it). The tool set is
 * phaseloop's own policy file, outranking every settings file
 * (`--admin-policy`, and `--policy` in place of any the settings name), with
 * phaseloop's system settings merged last (see gemini-policy.ts); both live
 * outside the repository. No extension loads (`-e none`), no MCP server but
 * the tool set's starts. The workdir is trusted deliberately
 * (`GEMINI_CLI_TRUST_WORKSPACE=true`): headless Gemini CLI refuses to start in
 * an untrusted folder (exit 55), and what a trusted repository's
 * `.gemini/settings.json` could widen is outranked or switched off.
 */
import type { AgentAdapter, ToolCall } from "./agent-adapter.ts";
import { GEMINI_READ_TOOLS, GEMINI_SHELL_TOOL, GEMINI_WRITE_TOOLS, geminiConfig } from "./gemini-policy.ts";
import { privateConfigFile } from "./private-config.ts";
import { geminiMcpStartFailures, withMcpStartCheck } from "../mcp/mcp-start-check.ts";
import { brief, createStreamParser, num, str, type Decoded, type Ev, type StreamPreset } from "./stream-json.ts";

export const geminiAgent: AgentAdapter = {
  name: "gemini",
  versionArgv: ["gemini", "--version"],
  buildInvocation(input) {
    const config = geminiConfig(input.tools, input.mcp);
    const policy = privateConfigFile("gemini-policy", "toml", config.policy);
    const settings = privateConfigFile("gemini-system-settings", "json", config.settings);
    const argv = ["gemini", "-o", "stream-json", "--approval-mode", config.approvalMode, `--admin-policy=${policy}`, `--policy=${policy}`, "-e", "none", `--allowed-mcp-server-names=${config.mcpServers.join(",")}`];
    if (input.agent.model) argv.push("-m", input.agent.model);
    // a session continued, by the id its init event gave (gemini keeps it under its project's chats)
    if (input.session) argv.push("--resume", input.session);
    argv.push(...(input.agent.args ?? []).map(input.render), "-p", "");
    const env: Record<string, string> = { GEMINI_CLI_SYSTEM_SETTINGS_PATH: settings, GEMINI_CLI_TRUST_WORKSPACE: "true" };
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "gemini-stream-json" };
  },
  createParser: createGeminiParser,
};

const READS = new Set<string>([...GEMINI_READ_TOOLS, "grep"]);
const WRITES = new Set<string>([...GEMINI_WRITE_TOOLS, "edit"]);

export const geminiStream: StreamPreset = {
  name: "gemini",
  decode(ev): Decoded | undefined {
    if (ev.type === "init") return { session: str(ev.session_id) };
    if (ev.type === "message" && ev.role === "assistant" && typeof ev.content === "string") return ev.delta ? { textDelta: ev.content } : { text: ev.content };
    if (ev.type === "tool_use") {
      const name = String(ev.tool_name ?? "?");
      const p = (ev.parameters ?? {}) as Ev;
      const paths = [p.file_path, p.absolute_path, p.path, p.dir_path, ...(Array.isArray(p.include) ? p.include : [])].filter((x): x is string => typeof x === "string" && x !== "");
      const kind: ToolCall["kind"] = name === GEMINI_SHELL_TOOL ? "bash" : READS.has(name) ? "read" : WRITES.has(name) ? "write" : "other";
      const call: ToolCall = { tool: name, kind, paths, command: kind === "bash" ? str(p.command) : undefined, search: (name !== "read_file" && name !== "read_many_files" && READS.has(name)) || undefined, id: str(ev.tool_id), input: ev.parameters, ...(name.startsWith("mcp_") ? { mcp: { tool: name } } : {}) };
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
  judge(result, seen) {
    if (!result) return { success: false, error: { class: "agent_error", message: "gemini ended without a result event" } };
    if (result.status === "success") {
      // a call the CLI refused (not offered, or denied by the policy) breaks the tool set as much as one it let through
      const refused = seen.toolCalls.filter((c) => c.refused);
      if (refused.length > 0) return { success: false, error: { class: "policy_violation", message: `gemini was refused ${refused.slice(0, 5).map((c) => `${c.tool}${c.command !== undefined ? ` \`${brief(c.command, 120)}\`` : c.paths.length ? ` ${c.paths.join(" ")}` : ""} (${brief(c.refused!, 100)})`).join("; ")}` } };
      return { success: true };
    }
    const error = (result.error ?? {}) as Ev;
    const message = str(error.message) ?? (typeof result.error === "string" ? result.error : String(result.status));
    const status = httpStatus(result, message, seen.exitCode);
    const transient = status === 429 || (status >= 500 && status < 600);
    return { success: false, error: { class: transient ? "transient" : "agent_error", message: `gemini: ${brief(message, 400)}${status && !message.includes(String(status)) ? ` (HTTP ${status})` : ""}` } };
  },
};

/**
 * The HTTP status of a failed result: its error's code, the API's error body
 * the message quotes, or else the exit code: Gemini CLI 0.61 exits with the
 * status modulo 256 (400 → 144, 429 → 173, 500 → 244) and rewords a 429.
 */
function httpStatus(result: Ev, message: string, exitCode: number | null): number {
  const error = (result.error ?? {}) as Ev;
  for (const v of [error.code, error.status, result.code]) if (typeof v === "number" && v >= 400 && v < 600) return v;
  const m = /\b(?:status(?: code)?|HTTP)[:\s]+(\d{3})\b|\[(\d{3})[^\]]*\]|"code":\s*(\d{3})\b/i.exec(message);
  if (m) return Number(m[1] ?? m[2] ?? m[3]);
  return exitCode !== null && exitCode >= 144 && exitCode <= 255 ? exitCode + 256 : 0;
}

export function createGeminiParser() {
  return createStreamParser(withMcpStartCheck(geminiStream, { stderr: geminiMcpStartFailures }));
}
