/**
 * The claude preset. Claude Code headless: `claude -p --output-format stream-json --verbose`,
 * the prompt on stdin. Nothing from the repository configures the session
 * (`--setting-sources=` empty, `--strict-mcp-config`); the tool set becomes
 * the tools that exist (`--tools=`), the rules that grant them
 * (`--allowedTools=`, absolute and brace-expanded, see tool-globs.ts) and
 * `--permission-mode dontAsk` (anything else refused, never asked). Without a
 * tool set: `acceptEdits` with Bash allowed, writes headless inside the workdir.
 * The `result` event judges: `is_error`, `api_error_status`, `subtype`, in the
 * CLI's own words; claude's own retries are bounded (CLAUDE_CODE_MAX_RETRIES).
 * With `--json-schema` its `structured_output` is the phase's `json` outputs'
 * answer, and its last text turn the text every other output reads.
 */
import type { ToolSetSpec } from "../../pipeline/spec.ts";
import type { McpServer } from "../../mcp/mcp-server.ts";
import { withMcpStartCheck, type McpStartFailure } from "../mcp-start-check.ts";
import type { ToolCall } from "../agent-adapter.ts";
import { brief, createStreamParser, decodeContentBlocks, num, str, toolResultRefusals, type Decoded, type Ev, type StreamPreset } from "../stream-json.ts";
import { anchorGlob, expandBraces } from "../tool-globs.ts";
import type { AgentPreset } from "./agent-preset.ts";

export interface ClaudePermissions {
  mode: "dontAsk" | "acceptEdits";
  /** The tools that exist in the session; undefined = claude's defaults. */
  tools?: string[];
  allowed: string[];
}

/** The neutral tool set in Claude Code's permission vocabulary. */
export function claudePermissions(tools: ToolSetSpec | undefined, workdir: string): ClaudePermissions {
  if (!tools) return { mode: "acceptEdits", allowed: ["Bash", "Read", "Grep", "Glob", "Edit", "Write", "NotebookEdit"] };
  const read = tools.read ?? [];
  const write = tools.write ?? [];
  const bash = tools.bash ?? [];
  const mcp = tools.mcp ?? [];
  const exist: string[] = [];
  const allowed: string[] = [];
  if (read.length || write.length) exist.push("Read", "Grep", "Glob");
  if (write.length) exist.push("Edit", "Write", "NotebookEdit");
  if (bash.length) exist.push("Bash");
  // `//` starts an absolute path in claude's rules; a rule per brace alternative
  const rule = (tool: string, globs: string[]) => {
    for (const g of globs) for (const e of expandBraces(g)) allowed.push(`${tool}(/${anchorGlob(workdir, e)})`);
  };
  rule("Read", [...read, ...write]);
  rule("Edit", write);
  for (const b of bash) allowed.push(`Bash(${b.trim()})`);
  for (const m of mcp) {
    const [server, tool = "*"] = m.split("/");
    const name = tool === "*" ? `mcp__${server}` : `mcp__${server}__${tool}`;
    exist.push(name);
    allowed.push(name);
  }
  return { mode: "dontAsk", tools: exist, allowed };
}

/** Environment that keeps a headless session to its job: claude's retries bounded, no updates, no side requests. */
export const CLAUDE_ENV: Readonly<Record<string, string>> = {
  CLAUDE_CODE_MAX_RETRIES: "0",
  DISABLE_AUTOUPDATER: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
};

export const claude: AgentPreset = {
  name: "claude",
  program: "claude",
  versionArgv: ["claude", "--version"],
  installHint: "install Claude Code (npm install -g @anthropic-ai/claude-code), or change the preset",
  outputFormat: "claude-stream-json",
  sessions: true,
  mcp: true,
  answerBesideText: true,
  sandbox: {
    hosts: ["api.anthropic.com"],
    baseUrlVars: ["ANTHROPIC_BASE_URL"],
    state: [".claude", ".claude.json", ".cache/claude"],
    stateVars: ["CLAUDE_CONFIG_DIR"],
    stateConfig: ["settings.json", "settings.local.json", "commands", "agents", "hooks", "plugins", "CLAUDE.md", "output-styles"],
    // the preset's own API host among them: refused only where the pipeline moved the API elsewhere
    // (a gateway), and then only the CLI's own side traffic goes there
    housekeeping: ["api.anthropic.com", "statsig.anthropic.com", "statsig.com", "sentry.io", "o1158394.ingest.sentry.io"],
    projectConfig: [".claude"],
    // on Vertex AI: CLAUDE_CODE_USE_VERTEX, CLOUD_ML_REGION, VERTEX_REGION_*
    envPrefixes: ["ANTHROPIC_", "CLAUDE_", "VERTEX_"],
    envNames: ["CLOUD_ML_REGION"],
    // Claude Code on Bedrock reads the AWS credentials; only then do they reach it
    envWhen: { flag: "CLAUDE_CODE_USE_BEDROCK", names: /^AWS_(?:ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN|REGION|PROFILE|DEFAULT_REGION|BEARER_TOKEN_BEDROCK)$/ },
  },
  invocation(input, fx) {
    const argv = ["claude", "-p", "--output-format", "stream-json", "--verbose", "--setting-sources=", "--strict-mcp-config"];
    // the phase's MCP servers and, with --strict-mcp-config, no others
    const mcp = input.mcp ?? [];
    if (mcp.length) argv.push(`--mcp-config=${fx.configFile("claude-mcp", "json", claudeMcpConfig(mcp, input.workdir))}`);
    if (input.agent.model) argv.push(`--model=${input.agent.model}`);
    // a session continued: claude finds it by id in its own store (flags are not remembered: all given again)
    if (input.session) argv.push(`--resume=${input.session}`);
    const p = claudePermissions(input.tools, input.workdir);
    // without a tool set every tool of an attached server may be called
    if (!input.tools) p.allowed.push(...mcp.map((s) => `mcp__${s.name}`));
    argv.push("--permission-mode", p.mode);
    if (p.tools) argv.push(`--tools=${p.tools.join(",")}`);
    if (p.allowed.length) argv.push(`--allowedTools=${p.allowed.join(",")}`);
    // the structured answer comes back beside the text (`structured_output`), which the other outputs read
    if (input.outputSchema) argv.push(`--json-schema=${JSON.stringify(input.outputSchema)}`);
    argv.push(...(input.agent.args ?? []).map(input.render));
    const env: Record<string, string> = { ...CLAUDE_ENV };
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "claude-stream-json" };
  },
  createParser: createClaudeParser,
};

/** `{"mcpServers": {…}}` as Claude Code reads it from `--mcp-config FILE` (also what a command agent finds at PHASELOOP_MCP_CONFIG). */
export function claudeMcpConfig(servers: readonly McpServer[], workdir: string): string {
  const mcpServers: Record<string, unknown> = {};
  for (const s of servers) {
    if (s.type === "http") {
      mcpServers[s.name] = { type: "http", url: s.url, ...(Object.keys(s.headers).length ? { headers: s.headers } : {}) };
      continue;
    }
    // claude starts servers in its own cwd (the workdir): another cwd is entered by a shell first
    const argv = s.cwd === workdir ? [s.command, ...s.args] : ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", s.cwd, s.command, ...s.args];
    mcpServers[s.name] = { type: "stdio", command: argv[0], args: argv.slice(1), env: s.env };
  }
  return `${JSON.stringify({ mcpServers }, null, 2)}\n`;
}

const READ_TOOLS = new Set(["Read", "Grep", "Glob", "LS", "NotebookRead"]);
const WRITE_TOOLS = new Set(["Edit", "Write", "MultiEdit", "NotebookEdit"]);

function toolCall(c: Ev): ToolCall {
  const name = String(c.name ?? "?");
  const input = (c.input && typeof c.input === "object" ? c.input : {}) as Ev;
  const paths = [input.file_path, input.notebook_path, input.path].filter((p): p is string => typeof p === "string" && p !== "");
  const kind = name === "Bash" ? "bash" : READ_TOOLS.has(name) ? "read" : WRITE_TOOLS.has(name) ? "write" : "other";
  // Grep and Glob without a path search the workdir
  const search = name === "Grep" || name === "Glob" || name === "LS";
  if (search && paths.length === 0) paths.push(".");
  const mcp = name.startsWith("mcp__") ? { tool: name } : undefined;
  return { tool: name, kind, paths, command: name === "Bash" ? str(input.command) : undefined, search: search || undefined, id: str(c.id), input, ...(mcp ? { mcp } : {}) };
}

function describeCall(call: ToolCall, input: Ev): string {
  if (call.command !== undefined) return `$ ${brief(call.command, 140)}`;
  const pattern = str(input.pattern);
  return `${call.tool}${call.paths.length ? ` ${call.paths.join(" ")}` : ""}${pattern ? ` ${brief(pattern, 60)}` : ""}`;
}

export const claudeStream: StreamPreset = {
  name: "claude",
  decode(ev): Decoded | undefined {
    const d: Decoded = { session: str(ev.session_id) };
    if (ev.type === "system") {
      if (ev.subtype === "init") d.display = [`claude ${str(ev.model) ?? ""} (${str(ev.permissionMode) ?? "default"} mode)`.replace("  ", " ")];
      else if (ev.subtype === "api_retry") d.display = [`API retry ${num(ev.attempt)}${ev.error_status ? ` after HTTP ${num(ev.error_status)}` : ""}`];
      return d;
    }
    if (ev.type === "assistant") {
      decodeContentBlocks(d, (ev.message as Ev | undefined)?.content, toolCall, describeCall);
      return d;
    }
    if (ev.type === "user") {
      // claude says a refusal in the tool result: "Permission to use Write has been denied …", "… requested permissions …"
      toolResultRefusals(d, (ev.message as Ev | undefined)?.content, /\bpermission\b.*\b(?:denied|haven't granted|not granted)\b|\brequested permissions\b/i, (text) => brief(text.split(".")[0] ?? text, 120));
      return d;
    }
    if (ev.type === "result") {
      const usage = (ev.usage ?? {}) as Ev;
      d.usage = { tokens: num(usage.input_tokens) + num(usage.output_tokens) + num(usage.cache_creation_input_tokens) + num(usage.cache_read_input_tokens), costUsd: num(ev.total_cost_usd) || num(ev.cost_usd), total: true };
      d.terminal = true;
      const status = num(ev.api_error_status);
      d.display = [ev.is_error === true || ev.subtype !== "success" ? `✗ ${str(ev.subtype) ?? "error"}${status ? ` (HTTP ${status})` : ""}: ${brief(str(ev.result) ?? "", 160)}` : `✓ done in ${num(ev.num_turns)} turns`];
      return d;
    }
    return d;
  },
  judge(result) {
    if (!result) return { success: false, error: { class: "agent_error", message: "claude ended without a result event" } };
    // under --json-schema the result is the structured answer, kept apart: the text is claude's own last words
    const structured = result.structured_output !== undefined && result.structured_output !== null ? result.structured_output : undefined;
    const text = structured !== undefined ? undefined : str(result.result);
    const status = num(result.api_error_status);
    const failed = result.is_error === true || result.subtype !== "success";
    if (!failed) {
      const denials = Array.isArray(result.permission_denials) ? (result.permission_denials as Ev[]) : [];
      if (denials.length > 0) return { success: false, text, structured, error: { class: "policy_violation", message: `claude was refused ${denials.map(describeDenial).join("; ")}` } };
      return { success: true, text, structured };
    }
    const why = claudeFailure(result);
    const transient = status === 429 || status === 529 || (status >= 500 && status < 600) || /overloaded/i.test(str((result.errors as unknown[] | undefined)?.[0]) ?? "");
    return { success: false, text, error: { class: transient ? "transient" : "agent_error", message: why } };
  },
};

function describeDenial(d: Ev): string {
  const input = (d.tool_input ?? {}) as Ev;
  const what = str(input.command) ?? str(input.file_path) ?? str(input.path) ?? str(input.notebook_path);
  return `${String(d.tool_name ?? "?")}${what ? ` ${brief(what, 120)}` : ""}`;
}

/** The failure in claude's own words: its message, the HTTP status, the subtype. */
function claudeFailure(result: Ev): string {
  const status = num(result.api_error_status);
  const subtype = str(result.subtype) ?? "error";
  const errors = Array.isArray(result.errors) ? (result.errors as unknown[]).map((e) => (typeof e === "string" ? e : str((e as Ev)?.message) ?? "")).filter(Boolean) : [];
  const message = brief(str(result.result) || errors.join("; ") || "", 300);
  if (subtype === "error_max_turns") return `claude stopped at its turn limit (max turns ${num(result.num_turns) || "?"})${message ? `: ${message}` : ""}`;
  if (subtype === "error_max_budget_usd") return `claude stopped at its budget${message ? `: ${message}` : ""}`;
  return `claude: ${message || subtype}${status ? ` (HTTP ${status})` : subtype !== "success" ? ` (${subtype})` : ""}`;
}

export function createClaudeParser() {
  return createStreamParser(withMcpStartCheck(claudeStream, { event: claudeMcpStartFailures, used: claudeMcpServersUsed() }));
}

/** Claude Code's `system/init` lists each server with its status ("connected", "failed", "needs-auth", "pending"). */
export function claudeMcpStartFailures(ev: Ev): McpStartFailure[] | undefined {
  if (ev.type !== "system" || ev.subtype !== "init" || !Array.isArray(ev.mcp_servers)) return undefined;
  return (ev.mcp_servers as Ev[]).filter((s) => s && s.status !== "connected" && s.status !== "pending").map((s) => ({ server: String(s.name ?? "?"), reason: `claude reports it ${String(s.status ?? "failed")}` }));
}

/**
 * For one claude stream: the servers whose `mcp__SERVER__TOOL` calls came
 * back without an error (the call in an assistant message, its tool_result
 * in the next user message).
 */
export function claudeMcpServersUsed(): (ev: Ev) => string[] | undefined {
  const calls = new Map<string, string>();
  return (ev) => {
    const content = (ev.message as Ev | undefined)?.content;
    if (!Array.isArray(content)) return undefined;
    const out: string[] = [];
    for (const block of content as Ev[]) {
      if (ev.type === "assistant" && block?.type === "tool_use" && typeof block.name === "string" && typeof block.id === "string") {
        const m = /^mcp__(.+?)__./.exec(block.name);
        if (m) calls.set(block.id, m[1]!);
      } else if (ev.type === "user" && block?.type === "tool_result" && block.is_error !== true && typeof block.tool_use_id === "string") {
        const server = calls.get(block.tool_use_id);
        if (server !== undefined) out.push(server);
      }
    }
    return out;
  };
}
