/**
 * The gemini preset's description: how its CLI is started and read. Its traits (program,
 * install hint, what it supports, its sandbox needs) are pipeline/presets/gemini.ts, spread here.
 *
 * Gemini CLI: `gemini -o stream-json -p ""` reads the prompt from stdin (a
 * non-TTY stdin is the prompt; `-p` text is appended to it). The tool set is
 * phaseloop's own policy file, outranking every settings file
 * (`--admin-policy`, and `--policy` in place of any the settings name), with
 * phaseloop's system settings merged last (geminiConfig below); both live
 * outside the repository. No extension loads (`-e none`), no MCP server but
 * the tool set's starts. The workdir is trusted deliberately
 * (`GEMINI_CLI_TRUST_WORKSPACE=true`): headless Gemini CLI refuses to start in
 * an untrusted folder (exit 55), and what a trusted repository's
 * `.gemini/settings.json` could widen is outranked or switched off.
 */
import type { ToolSetSpec } from "../../pipeline/spec.ts";
import type { McpServer } from "../../mcp/mcp-server.ts";
import { withMcpStartCheck, type McpStartFailure } from "../../mcp/mcp-start-check.ts";
import type { ToolCall } from "../agent-adapter.ts";
import { brief, createStreamParser, num, str, type Decoded, type Ev, type StreamPreset } from "../stream-json.ts";
import { geminiTraits } from "../../pipeline/presets/gemini.ts";
import type { AgentPreset } from "./agent-preset.ts";

/**
 * The allowlist compiler. A phase's tool set in Gemini CLI's own terms, pure: a policy file (TOML
 * rules of its policy engine, passed as `--admin-policy` and `--policy`, so
 * that they outrank every rule settings can add) and the system settings
 * (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`, merged last, so they win over the
 * user's and the repository's) that switch off what a repository's
 * `.gemini/settings.json` could otherwise start: hooks, tool discovery
 * commands, subagents, CLI-internal retries.
 */
export const GEMINI_READ_TOOLS = ["read_file", "read_many_files", "glob", "grep_search", "search_file_content", "list_directory"] as const;
export const GEMINI_WRITE_TOOLS = ["write_file", "replace"] as const;
export const GEMINI_SHELL_TOOL = "run_shell_command";

export interface GeminiConfig {
  /** TOML of the policy engine's rules. */
  policy: string;
  /** JSON of the system settings. */
  settings: string;
  approvalMode: "default" | "auto_edit";
  /** The MCP servers that may start (`--allowed-mcp-server-names`): the phase's; a name no server has when none may. */
  mcpServers: string[];
}

/** No MCP server is called this: naming it alone lets none start. */
export const NO_MCP_SERVER = "phaseloop-no-mcp-server";

export function geminiConfig(tools: ToolSetSpec | undefined, mcp: readonly McpServer[] = []): GeminiConfig {
  const rules: string[] = [];
  const rule = (fields: Record<string, string | number | string[]>) => {
    rules.push(["[[rule]]", ...Object.entries(fields).map(([k, v]) => `${k} = ${toml(v)}`)].join("\n"));
  };
  // the phase's servers start, and no other
  const mcpServers = mcp.map((s) => s.name);
  if (!tools) {
    // no tool set: the workdir is the agent's, as on every CLI; nothing else is widened
    rule({ toolName: [...GEMINI_READ_TOOLS, ...GEMINI_WRITE_TOOLS, GEMINI_SHELL_TOOL], decision: "allow", priority: 900 });
    for (const s of mcpServers) rule({ toolName: `mcp_${s}_*`, mcpName: s, decision: "allow", priority: 900 });
  } else {
    const read = tools.read ?? [];
    const write = tools.write ?? [];
    for (const pattern of tools.bash ?? []) for (const argsPattern of shellArgsPatterns(pattern)) rule({ toolName: GEMINI_SHELL_TOOL, argsPattern, decision: "allow", priority: 990 });
    if (read.length || write.length) rule({ toolName: [...GEMINI_READ_TOOLS], decision: "allow", priority: 980 });
    if (write.length) rule({ toolName: [...GEMINI_WRITE_TOOLS], decision: "allow", priority: 980 });
    for (const m of tools.mcp ?? []) {
      const [server = "", tool = "*"] = m.split("/");
      if (!mcpServers.includes(server)) continue;
      rule({ toolName: `mcp_${server}_${tool}`, mcpName: server, decision: "allow", priority: 980 });
    }
    // everything else, the shell included, is refused: not offered to the model at all
    rule({ toolName: "*", decision: "deny", priority: 100, denyMessage: "outside the phase's tool set (phaseloop)" });
  }
  const settings = {
    general: { maxAttempts: 1 },
    hooksConfig: { enabled: false },
    tools: { discoveryCommand: "", callCommand: "" },
    experimental: { enableAgents: false },
    skills: { enabled: false },
    admin: { extensions: { enabled: false } },
    mcpServers: geminiMcpServers(mcp),
  };
  return {
    policy: `# phaseloop: this phase's tool set\n${rules.join("\n\n")}\n`,
    settings: `${JSON.stringify(settings, null, 2)}\n`,
    approvalMode: !tools || (tools.write ?? []).length > 0 ? "auto_edit" : "default",
    mcpServers: mcpServers.length ? mcpServers : [NO_MCP_SERVER],
  };
}

/**
 * A bash pattern (`npm test`, `git diff *`) as regexes over the policy
 * engine's JSON of the call's arguments (`"command":"…"`): the words must
 * match from the start, a `*` inside a word matches characters of that word,
 * and the command must end where the pattern does; a final `*` gives a second
 * regex that lets further words follow. Quotes and backslashes in a command
 * match no regex (the engine refuses it; phaseloop's own check afterwards
 * reads quotes). Gemini CLI refuses a group followed by a quantifier as a
 * possible ReDoS, so there is none. The engine checks each part of a command
 * list on its own and refuses redirections headless.
 */
export function shellArgsPatterns(pattern: string): string[] {
  const words = pattern.trim().split(/\s+/).filter(Boolean);
  const open = words.length > 1 && words[words.length - 1] === "*";
  const fixed = open ? words.slice(0, -1) : words;
  const body = fixed.map((w) => (w === "*" ? '[^"\\\\]*' : w.split("*").map((lit) => escapeRegex(lit)).join('[^" \\\\]*'))).join(" ");
  const exact = `"command":"${body}"`;
  return open ? [exact, `"command":"${body} [^"\\\\]*"`] : [exact];
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function toml(v: string | number | string[]): string {
  if (typeof v === "number") return String(v);
  if (Array.isArray(v)) return `[${v.map((x) => JSON.stringify(x)).join(", ")}]`;
  return JSON.stringify(v);
}

export const gemini: AgentPreset = {
  ...geminiTraits,
  invocation(input, fx) {
    const config = geminiConfig(input.tools, input.mcp);
    const policy = fx.configFile("gemini-policy", "toml", config.policy);
    const settings = fx.configFile("gemini-system-settings", "json", config.settings);
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

/**
 * Gemini CLI 0.61 headless says only "MCP issues detected. Run /mcp list for status." on stderr,
 * naming neither the server nor the reason (those go to its debug log).
 */
export function geminiMcpStartFailures(line: string): McpStartFailure[] | undefined {
  return /\bMCP issues detected\b/.test(line) ? [{ reason: `gemini says only "${line.trim()}"` }] : undefined;
}

/** The `mcpServers` of Gemini CLI's settings. */
export function geminiMcpServers(servers: readonly McpServer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of servers) {
    if (s.type === "http") out[s.name] = { httpUrl: s.url, ...(Object.keys(s.headers).length ? { headers: s.headers } : {}) };
    else out[s.name] = { command: s.command, args: s.args, env: s.env, cwd: s.cwd };
  }
  return out;
}
