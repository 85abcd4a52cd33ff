/**
 * The qwen preset. Qwen Code headless: `qwen --output-format stream-json
 * --approval-mode default`, the prompt on stdin. Its tool set is Qwen Code's
 * own: the tools that exist (`tools.core`) and the rules that approve calls
 * without asking (`permissions.allow`, Claude-style `Edit(src/**)`,
 * `Bash(npm test)`), in system settings phaseloop writes
 * (QWEN_CODE_SYSTEM_SETTINGS_PATH, merged last). Headless, a call that would
 * need asking is declined and comes back as an error tool result; the
 * `result` lists it in `permission_denials`, and the phase fails. Folder
 * trust is on and no folder is trusted (QWEN_CODE_TRUSTED_FOLDERS_PATH), so a
 * repository's `.qwen/settings.json` is not read; no hooks, no usage
 * statistics, no telemetry, no update check, no managed memory. The API is
 * OpenAI-compatible: `base_url` becomes `--openai-base-url`, the key is
 * OPENAI_API_KEY (or `api_key_env`'s variable, given to it as OPENAI_API_KEY).
 * The `result` event judges, in the CLI's own words ("[API Error: 401 …]");
 * `--json-schema` makes the answer a `structured_output` call whose value the
 * result carries (`structured_result`).
 */
import type { ToolSetSpec } from "../../pipeline/spec.ts";
import type { ToolCall } from "../agent-adapter.ts";
import { brief, createStreamParser, decodeContentBlocks, num, str, toolResultRefusals, type Decoded, type Ev, type StreamPreset } from "../stream-json.ts";
import { expandBraces } from "../tool-globs.ts";
import type { AgentPreset } from "./agent-preset.ts";

export const QWEN_READ_TOOLS = ["read_file", "grep_search", "glob", "list_directory"] as const;
export const QWEN_WRITE_TOOLS = ["edit", "write_file"] as const;
export const QWEN_SHELL_TOOL = "run_shell_command";
/** Tools that reach past the tool set (subagents, skills, the web, schedules): refused in a phase with a tool set. */
const QWEN_OTHER_TOOLS = ["agent", "skill", "web_fetch", "web_search", "notebook_edit", "monitor", "cron_create", "cron_delete", "send_message", "enter_worktree", "exit_worktree", "tool_call", "tool_search"] as const;

export interface QwenPermissions {
  /** The tools that exist (`tools.core`). */
  core: string[];
  allow: string[];
  deny: string[];
}

/** A glob as Qwen Code's rules match it: relative to the workdir, without `./`, braces expanded. */
function ruleGlobs(globs: readonly string[]): string[] {
  return globs.flatMap((g) => expandBraces(g)).map((g) => g.replace(/^(?:\.\/)+/, ""));
}

/** The neutral tool set in Qwen Code's permission vocabulary. */
export function qwenPermissions(tools: ToolSetSpec | undefined): QwenPermissions {
  // without a tool set the workdir is the agent's: files and commands approved (its tools keep to the workspace), nothing else
  if (!tools) return { core: [...QWEN_READ_TOOLS, ...QWEN_WRITE_TOOLS, QWEN_SHELL_TOOL], allow: ["Edit", "Bash"], deny: [...QWEN_OTHER_TOOLS] };
  const read = tools.read ?? [];
  const write = tools.write ?? [];
  const bash = tools.bash ?? [];
  const core: string[] = [];
  const allow: string[] = [];
  if (read.length || write.length) core.push(...QWEN_READ_TOOLS);
  if (write.length) core.push(...QWEN_WRITE_TOOLS);
  if (bash.length) core.push(QWEN_SHELL_TOOL);
  for (const g of ruleGlobs(write)) allow.push(`Edit(${g})`);
  for (const b of bash) allow.push(`Bash(${b.trim()})`);
  // `tools.core` must not be empty (empty means every tool): a tool set of nothing keeps a harmless one
  if (core.length === 0) core.push("todo_write");
  return { core, allow, deny: [...QWEN_OTHER_TOOLS] };
}

/** The system settings: the tool set, and everything a repository or the network could add switched off. */
export function qwenSystemSettings(tools: ToolSetSpec | undefined): Record<string, unknown> {
  const p = qwenPermissions(tools);
  return {
    ...(p.core.length ? { tools: { core: p.core } } : {}),
    permissions: { allow: p.allow, deny: p.deny },
    security: { folderTrust: { enabled: true } },
    disableAllHooks: true,
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false, disableUpdateNag: true },
    memory: { enableManagedAutoMemory: false },
    // the SDK's own retries off (Qwen Code still retries a 429 or 5xx itself, 7 attempts)
    model: { generationConfig: { maxRetries: 0 } },
  };
}

export const qwen: AgentPreset = {
  name: "qwen",
  program: "qwen",
  versionArgv: ["qwen", "--version"],
  installHint: "install Qwen Code (npm install -g @qwen-code/qwen-code), or change the preset",
  outputFormat: "qwen-stream-json",
  sessions: true,
  mcp: false,
  sandbox: {
    hosts: ["dashscope.aliyuncs.com", "dashscope-intl.aliyuncs.com", "api.openai.com"],
    baseUrlVars: ["OPENAI_BASE_URL"],
    state: [".qwen"],
    // not `skills` nor `extensions`: Qwen Code creates both at every start, and headless it loads no extension (`--extensions none`)
    stateConfig: ["settings.json", "QWEN.md", "AGENTS.md", "commands", "agents", "hooks", "trustedFolders.json", ".env"],
    stateVars: ["QWEN_HOME"],
    housekeeping: ["gb4w8c3ygj-default-sea.rum.aliyuncs.com", "registry.npmjs.org"],
    projectConfig: [".qwen"],
    envPrefixes: ["QWEN_", "OPENAI_", "DASHSCOPE_"],
  },
  invocation(input, fx) {
    const settings = fx.configFile("qwen-system-settings", "json", `${JSON.stringify(qwenSystemSettings(input.tools), null, 2)}\n`);
    const trusted = fx.configFile("qwen-trusted-folders", "json", "{}\n");
    // no MCP server starts: none is called this
    const argv = ["qwen", "--output-format", "stream-json", "--approval-mode", "default", "--allowed-mcp-server-names", "phaseloop-no-mcp-server", "--extensions", "none"];
    const env: Record<string, string> = { QWEN_CODE_SYSTEM_SETTINGS_PATH: settings, QWEN_CODE_TRUSTED_FOLDERS_PATH: trusted };
    if (input.agent.base_url) argv.push("--auth-type", "openai", "--openai-base-url", input.agent.base_url);
    if (input.agent.api_key_env) {
      const key = fx.env[input.agent.api_key_env];
      if (key !== undefined) env.OPENAI_API_KEY = key;
    }
    if (input.agent.model) argv.push("-m", input.agent.model);
    // the answer under the phase's schema: a structured_output call that ends the session
    if (input.outputSchema) argv.push(`--json-schema=${JSON.stringify(input.outputSchema)}`);
    if (input.session) argv.push(`--resume=${input.session}`);
    argv.push(...(input.agent.args ?? []).map(input.render));
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "qwen-stream-json" };
  },
  createParser: createQwenParser,
};

const READS = new Set<string>(QWEN_READ_TOOLS);
const WRITES = new Set<string>([...QWEN_WRITE_TOOLS, "notebook_edit"]);

function toolCall(c: Ev): ToolCall {
  const name = String(c.name ?? "?");
  const input = (c.input && typeof c.input === "object" ? c.input : {}) as Ev;
  const paths = [input.file_path, input.absolute_path, input.path, input.dir_path, input.notebook_path].filter((p): p is string => typeof p === "string" && p !== "");
  const kind: ToolCall["kind"] = name === QWEN_SHELL_TOOL ? "bash" : READS.has(name) ? "read" : WRITES.has(name) ? "write" : "other";
  const search = name !== "read_file" && READS.has(name);
  if (search && paths.length === 0) paths.push(".");
  return { tool: name, kind, paths, command: kind === "bash" ? str(input.command) : undefined, search: search || undefined, id: str(c.id), input, ...(name.startsWith("mcp__") ? { mcp: { tool: name } } : {}) };
}

function describeCall(call: ToolCall): string {
  return call.command !== undefined ? `$ ${brief(call.command, 140)}` : `${call.tool}${call.paths.length ? ` ${call.paths.join(" ")}` : ""}`;
}

export const qwenStream: StreamPreset = {
  name: "qwen",
  decode(ev): Decoded | undefined {
    const d: Decoded = { session: str(ev.session_id) };
    if (ev.type === "system" && ev.subtype === "init") {
      d.display = [`qwen ${str(ev.model) ?? ""} (${str(ev.permission_mode) ?? "default"} mode)`.replace("  ", " ")];
      return d;
    }
    if (ev.type === "assistant") {
      decodeContentBlocks(d, (ev.message as Ev | undefined)?.content, toolCall, describeCall);
      // each assistant message is a turn of its own
      if (Array.isArray((ev.message as Ev | undefined)?.content)) d.endTurn = true;
      return d;
    }
    if (ev.type === "user") {
      // "Qwen Code requires permission to use "X", but that permission was declined …", "… denied by permission rules"
      toolResultRefusals(d, (ev.message as Ev | undefined)?.content, /\bpermission\b.*\b(?:declined|denied)\b|\bdenied by permission rules\b|\bis not permitted\b/i, (text) => brief(text, 120));
      return d;
    }
    if (ev.type === "result") {
      const usage = (ev.usage ?? {}) as Ev;
      d.usage = { tokens: num(usage.total_tokens) || num(usage.input_tokens) + num(usage.output_tokens), costUsd: 0, total: true };
      d.terminal = true;
      d.display = [ev.is_error === true || ev.subtype !== "success" ? `✗ ${brief(failureText(ev), 160)}` : `✓ done in ${num(ev.num_turns)} turns`];
      return d;
    }
    return d;
  },
  judge(result, seen) {
    if (!result) return { success: false, error: { class: "agent_error", message: `qwen ended without a result event${seen.exitCode ? ` (exit ${seen.exitCode})` : ""}` } };
    const structured = result.structured_result ?? undefined;
    const text = str(result.result);
    if (result.is_error !== true && result.subtype === "success") {
      const denials = Array.isArray(result.permission_denials) ? (result.permission_denials as Ev[]) : [];
      const refused = seen.toolCalls.filter((c) => c.refused);
      if (denials.length > 0 || refused.length > 0) {
        const what = denials.length > 0 ? denials.map(describeDenial) : refused.map(describeCall);
        return { success: false, text, structured, error: { class: "policy_violation", message: `qwen was refused ${what.slice(0, 5).join("; ")}` } };
      }
      return { success: true, text, structured };
    }
    const message = failureText(result);
    // "[API Error: 429 …]": the status Qwen Code quotes
    const status = Number(/\bAPI Error:?\s*(\d{3})\b|\bstatus(?: code)?:?\s*(\d{3})\b/i.exec(message)?.slice(1).find(Boolean) ?? 0);
    const transient = status === 429 || (status >= 500 && status < 600);
    return { success: false, text, error: { class: transient ? "transient" : "agent_error", message: `qwen: ${brief(message, 400)}` } };
  },
};

function describeDenial(d: Ev): string {
  const input = (d.tool_input ?? {}) as Ev;
  const what = str(input.command) ?? str(input.file_path) ?? str(input.absolute_path) ?? str(input.path);
  return `${String(d.tool_name ?? "?")}${what ? ` ${brief(what, 120)}` : ""}`;
}

/** A failed result in the CLI's words: its error's message, its text, its subtype. */
function failureText(result: Ev): string {
  const error = result.error;
  const fromError = typeof error === "string" ? error : str((error as Ev | undefined)?.message);
  return fromError ?? str(result.result) ?? str(result.subtype) ?? "error";
}

export function createQwenParser() {
  return createStreamParser(qwenStream);
}
