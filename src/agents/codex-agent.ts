/**
 * OpenAI Codex: `codex exec --json -C DIR -s SANDBOX -` with the prompt on
 * stdin. The terminal event decides: `turn.completed` is success; `turn.failed`
 * (or an `error` and no completion) is failure, whatever the exit code.
 */
import type { AgentAdapter, ToolCall } from "./agent-adapter.ts";
import { splitCommand } from "./openai/command-words.ts";
import process from "node:process";
import { codexMcpOverrides } from "../mcp/compile-mcp.ts";
import { codexConfigServers } from "../mcp/codex-config-servers.ts";
import { codexMcpStartFailures, withMcpStartCheck } from "../mcp/mcp-start-check.ts";
import { isArtifactsGlob } from "../run/run-artifacts.ts";
import { brief, createStreamParser, num, str, type Decoded, type Ev, type StreamPreset } from "./stream-json.ts";

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

export const codexAgent: AgentAdapter = {
  name: "codex",
  versionArgv: ["codex", "--version"],
  buildInvocation(input) {
    // the run's artifacts folder alone does not open the workdir to codex's commands
    const writes = !input.tools || (input.tools.write ?? []).some((g) => !isArtifactsGlob(g));
    const argv = ["codex", "exec", "--json", "--skip-git-repo-check", "-C", input.workdir, "-s", writes ? "workspace-write" : "read-only", "--ignore-rules", ...CODEX_OVERRIDES.flatMap((o) => ["-c", o])];
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    // the phase's MCP servers; every server of codex's own config layers switched off
    const others = codexConfigServers({ ...process.env, ...env }, input.workdir);
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
