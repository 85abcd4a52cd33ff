/**
 * The codex preset's description: how its CLI is started and read. Its traits (program,
 * install hint, what it supports, its sandbox needs) are pipeline/presets/codex.ts, spread here.
 *
 * OpenAI Codex: `codex exec --json -C DIR -s SANDBOX -` with the prompt on
 * stdin. The terminal event decides: `turn.completed` is success; `turn.failed`
 * (or an `error` and no completion) is failure, whatever the exit code.
 */
import { parse as parseToml } from "smol-toml";
import type { McpServer } from "../../mcp/mcp-server.ts";
import { parseMcpEntry } from "../../mcp/mcp-allowlist.ts";
import { withMcpStartCheck, type McpStartFailure } from "../../mcp/mcp-start-check.ts";
import { isArtifactsGlob } from "../../pipeline/artifacts-glob.ts";
import type { ToolCall } from "../agent-adapter.ts";
import { splitCommand } from "../openai/command-words.ts";
import { brief, createStreamParser, num, str, type Decoded, type Ev, type StreamPreset } from "../stream-json.ts";
import { codexTraits } from "../../pipeline/presets/codex.ts";
import { joinPath as join } from "../../pipeline/presets/preset-traits.ts";
import type { AgentPreset, PresetEffects } from "./agent-preset.ts";

/**
 * Overrides that outrank every config layer (the user's ~/.codex/config.toml,
 * a trusted project's .codex/config.toml): no writable root but the workdir
 * (not /tmp, not $TMPDIR, not the config's writable_roots), no network from
 * commands, never an escalation out of the sandbox.
 */
export const CODEX_OVERRIDES: readonly string[] = [
  'approval_policy="never"',
  "sandbox_workspace_write.writable_roots=[]",
  "sandbox_workspace_write.network_access=false",
  "sandbox_workspace_write.exclude_slash_tmp=true",
  "sandbox_workspace_write.exclude_tmpdir_env_var=true",
];

export const codex: AgentPreset = {
  ...codexTraits,
  invocation(input, fx) {
    // the run's artifacts folder alone does not open the workdir to codex's commands
    const writes = !input.tools || (input.tools.write ?? []).some((g) => !isArtifactsGlob(g));
    const argv = ["codex", "exec", "--json", "--skip-git-repo-check", "-C", input.workdir, "-s", writes ? "workspace-write" : "read-only", "--ignore-rules", ...CODEX_OVERRIDES.flatMap((o) => ["-c", o])];
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    // the phase's MCP servers; every server of codex's own config layers switched off
    const others = codexConfigServers({ ...fx.env, ...env }, input.workdir, fx);
    argv.push(...codexMcpOverrides(input.mcp ?? [], others, input.tools?.mcp).flatMap((o) => ["-c", o]));
    if (input.agent.model) argv.push("-m", input.agent.model);
    // the structured answer, enforced by codex itself (the final message is the JSON)
    if (input.outputSchemaFile) argv.push("--output-schema", input.outputSchemaFile);
    argv.push(...(input.agent.args ?? []).map(input.render));
    // a session continued: `codex exec [options] resume THREAD_ID -` (exec's options still apply)
    if (input.session) argv.push("resume", input.session);
    argv.push("-");
    return { argv, stdin: input.prompt, env, outputFormat: "codex-json" };
  },
  createParser: createCodexParser,
};

function codexStream(): StreamPreset {
  let lastError: string | undefined;
  return {
    name: "codex",
    decode(ev): Decoded | undefined {
      // very old codex: {"id":..,"msg":{"type":...}} — passed through
      const type = str(ev.type) ?? str((ev.msg as Ev | undefined)?.type) ?? "";
      if (type === "thread.started") return { session: str(ev.thread_id) };
      if (type === "item.completed") {
        const item = (ev.item ?? {}) as Ev;
        if ((item.type === "agent_message" || item.item_type === "assistant_message") && typeof item.text === "string") return { text: item.text, display: item.text.trim().split("\n").filter(Boolean).map((l) => brief(l, 200)) };
        if (item.type === "command_execution" && typeof item.command === "string") {
          const call: ToolCall = { tool: "command_execution", kind: "bash", paths: [], command: unwrapShell(item.command), id: str(item.id) };
          return { tools: [call], display: [`→ $ ${brief(item.command, 140)}`] };
        }
        if (item.type === "file_change" && Array.isArray(item.changes)) {
          const paths = (item.changes as Ev[]).map((c) => str(c?.path)).filter((p): p is string => !!p);
          return { tools: [{ tool: "file_change", kind: "write", paths, id: str(item.id) }], display: [`→ edit ${paths.join(" ")}`] };
        }
        if (item.type === "mcp_tool_call") {
          const server = str(item.server) ?? "?";
          const tool = str(item.tool) ?? "?";
          const call: ToolCall = { tool: `${server}/${tool}`, kind: "other", paths: [], id: str(item.id), input: item.arguments, mcp: { server, tool } };
          const failed = item.status === "failed" ? ` ✗ ${brief(str((item.error as Ev | undefined)?.message) ?? "failed", 120)}` : "";
          return { tools: [call], display: [`→ mcp ${server}/${tool}${failed}`] };
        }
        if (item.type === "error" && typeof item.message === "string") lastError = item.message;
        return {};
      }
      if (type === "turn.completed") {
        const u = (ev.usage ?? {}) as Ev;
        return { usage: { tokens: num(u.input_tokens) + num(u.output_tokens), costUsd: 0 }, terminal: true, display: ["✓ turn completed"] };
      }
      if (type === "turn.failed") return { terminal: true, display: [`✗ ${brief(str((ev.error as Ev | undefined)?.message) ?? "turn failed")}`] };
      if (type === "error") {
        lastError = str(ev.message) ?? lastError;
        return { display: [`✗ ${brief(lastError ?? "error")}`] };
      }
      return {};
    },
    decodeStderr(line) {
      // codex says it refused a call (a patch outside the workdir, an escalation) only in its log on stderr
      const m = /\bERROR codex_core::tools::router: error=(.+)$/.exec(line);
      if (!m) return undefined;
      const reason = brief(m[1]!, 200);
      return { refused: [{ tool: "codex", reason }], display: [`✗ refused: ${reason}`] };
    },
    judge(terminal, seen) {
      if (terminal?.type === "turn.completed") {
        if (seen.denials.length > 0) return { success: false, error: { class: "policy_violation", message: `codex refused ${seen.denials.slice(0, 5).map((d) => String(d.input ?? d.tool)).join("; ")}` } };
        return { success: true };
      }
      const message = terminal ? (str((terminal.error as Ev | undefined)?.message) ?? str(terminal.message) ?? "turn failed") : lastError;
      if (message === undefined) return { success: false, error: { class: "agent_error", message: "codex ended without a terminal event" } };
      // codex's message carries the HTTP status ("last status: 429 …", "unexpected status 401 …"), except for a 5xx, which it words as "high demand"
      const status = Number(/\bstatus:? (\d{3})\b/i.exec(message)?.[1] ?? 0);
      const transient = status ? status === 429 || (status >= 500 && status < 600) : /experiencing high demand|stream disconnected before completion/i.test(message);
      return { success: false, error: { class: transient ? "transient" : "agent_error", message: `codex: ${message}` } };
    },
  };
}

export function createCodexParser() {
  return createStreamParser(withMcpStartCheck(codexStream(), { stderr: codexMcpStartFailures }));
}

/** codex reports a command as its shell ran it (`bash -lc 'npm test'`): the command is the script. */
export function unwrapShell(command: string): string {
  const words = splitCommand(command);
  if (!words.ok || words.argv.length !== 3) return command;
  const [shell, flag, script] = words.argv as [string, string, string];
  return /^(?:\/(?:usr\/)?bin\/)?(?:ba|z)?sh$/.test(shell) && /^-l?c$/.test(flag) ? script : command;
}

/** Codex CLI with `required = true`: "required MCP servers failed to initialize: NAME: REASON", then it exits. */
export function codexMcpStartFailures(line: string): McpStartFailure[] | undefined {
  const m = /required MCP servers failed to initialize: ([^:\s]+): (.*?)(?: \(code -?\d+\))?$/.exec(line);
  return m ? [{ server: m[1]!, reason: `codex: ${m[2]!.slice(0, 300)}` }] : undefined;
}

/**
 * `-c` overrides that give codex the phase's servers, and switch off every
 * other server its config layers declare (`others`: the names found there).
 * Where the allowlist names a server's tools exactly, codex enforces it too
 * (`enabled_tools`).
 */
export function codexMcpOverrides(servers: readonly McpServer[], others: readonly string[], allowlist: readonly string[] | undefined): string[] {
  const out: string[] = [];
  const key = (name: string) => `mcp_servers.${/^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name)}`;
  for (const s of servers) {
    const k = key(s.name);
    if (s.type === "http") {
      out.push(`${k}.url=${tomlString(s.url)}`);
      if (Object.keys(s.headers).length) out.push(`${k}.http_headers=${tomlTable(s.headers)}`);
    } else {
      out.push(`${k}.command=${tomlString(s.command)}`, `${k}.args=[${s.args.map(tomlString).join(",")}]`, `${k}.cwd=${tomlString(s.cwd)}`);
      if (Object.keys(s.env).length) out.push(`${k}.env=${tomlTable(s.env)}`);
    }
    // with approval_policy "never" codex refuses every MCP call it would ask about: the phase's own servers are approved, the allowlist decides
    // `required`: a server that fails to start ends codex with its name, instead of a session without its tools
    out.push(`${k}.enabled=true`, `${k}.required=true`, `${k}.default_tools_approval_mode="approve"`);
    if (allowlist) {
      const entries = allowlist.map(parseMcpEntry).filter((e) => e.server === s.name);
      if (!entries.some((e) => e.tool.includes("*"))) out.push(`${k}.enabled_tools=[${entries.map((e) => tomlString(e.tool)).join(",")}]`);
    }
  }
  const mine = new Set(servers.map((s) => s.name));
  for (const name of others) if (!mine.has(name)) out.push(`${key(name)}.enabled=false`);
  return out;
}

function tomlString(s: string): string {
  return JSON.stringify(s);
}

function tomlTable(map: Record<string, string>): string {
  return `{${Object.entries(map).map(([k, v]) => `${JSON.stringify(k)}=${tomlString(v)}`).join(",")}}`;
}

/**
 * The MCP servers Codex CLI would start from its own config layers: the
 * user's `$CODEX_HOME/config.toml` (else `~/.codex/config.toml`) and a
 * project's `.codex/config.toml` (honoured when the project is trusted).
 * phaseloop switches each of them off for a phase (`enabled=false`), since a
 * `-c` override cannot empty a table that a config layer fills.
 */
export function codexConfigServers(env: Record<string, string | undefined>, workdir: string, fx: Pick<PresetEffects, "homedir" | "readText">): string[] {
  const home = env.CODEX_HOME || join(env.HOME || fx.homedir(), ".codex");
  const names = new Set<string>();
  for (const file of [join(home, "config.toml"), join(workdir, ".codex/config.toml")]) {
    const text = fx.readText(file);
    if (text === undefined) continue;
    try {
      const config = parseToml(text) as { mcp_servers?: Record<string, unknown>; profiles?: Record<string, { mcp_servers?: Record<string, unknown> }> };
      for (const name of Object.keys(config.mcp_servers ?? {})) names.add(name);
      for (const p of Object.values(config.profiles ?? {})) for (const name of Object.keys(p?.mcp_servers ?? {})) names.add(name);
    } catch {
      // codex itself will say what is wrong with it
    }
  }
  return [...names];
}
