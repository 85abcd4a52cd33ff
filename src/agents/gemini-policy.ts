/**
 * A phase's tool set in Gemini CLI's own terms, pure: a policy file (TOML
 * rules of its policy engine, passed as `--admin-policy` and `--policy`, so
 * that they outrank every rule settings can add) and the system settings
 * (`GEMINI_CLI_SYSTEM_SETTINGS_PATH`, merged last, so they win over the
 * user's and the repository's) that switch off what a repository's
 * `.gemini/settings.json` could otherwise start: hooks, tool discovery
 * commands, subagents, CLI-internal retries.
 */
import type { ToolSetSpec } from "../pipeline/spec.ts";
import { geminiMcpServers } from "../mcp/compile-mcp.ts";
import type { McpServer } from "../mcp/mcp-server.ts";

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
