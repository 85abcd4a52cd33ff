import type { AgentAdapter, AgentRunReport, StreamParser } from "./agent-adapter.ts";

type Ev = Record<string, unknown>;
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * OpenAI Codex: `codex exec --json -C DIR -s SANDBOX -` with the prompt on
 * stdin. The terminal event decides: `turn.completed` is success; `turn.failed`
 * or `error` last (or no terminal event) is failure, whatever the exit code.
 */
export const codexAgent: AgentAdapter = {
  name: "codex",
  versionArgv: ["codex", "--version"],
  buildInvocation(input) {
    const writes = (input.tools?.write ?? []).length > 0 || !input.tools;
    const argv = ["codex", "exec", "--json", "--skip-git-repo-check", "-C", input.workdir, "-s", writes ? "workspace-write" : "read-only"];
    if (input.agent.model) argv.push("-m", input.agent.model);
    argv.push(...(input.agent.args ?? []).map(input.render), "-");
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "codex-json" };
  },
  createParser: createCodexParser,
};

export function createCodexParser(): StreamParser {
  let terminal: Ev | undefined;
  let text = "";
  let tokens = 0;
  let events = 0;
  let lastLine: string | undefined;
  let sessionId: string | undefined;
  const commands: string[] = [];
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
      // very old codex: {"id":..,"msg":{"type":...}} — pass through
      const type = typeof ev.type === "string" ? ev.type : typeof (ev.msg as Ev | undefined)?.type === "string" ? String((ev.msg as Ev).type) : "";
      if (type === "thread.started" && typeof ev.thread_id === "string") sessionId = ev.thread_id;
      if (type === "item.completed" || type === "item.updated") {
        const item = (ev.item ?? {}) as Ev;
        if ((item.type === "agent_message" || item.item_type === "assistant_message") && typeof item.text === "string") {
          text = item.text;
          lastLine = item.text.trim().split("\n").pop();
        } else if (item.type === "command_execution") {
          lastLine = `$ ${String(item.command ?? "")}`.slice(0, 120);
          if (type === "item.completed" && typeof item.command === "string" && commands.length < 50) commands.push(item.command.slice(0, 300));
        }
      }
      if (type === "turn.completed") {
        const u = (ev.usage ?? {}) as Ev;
        tokens += num(u.input_tokens) + num(u.output_tokens);
        terminal = ev;
      }
      if (type === "turn.failed" || type === "error") terminal = ev;
    },
    finish(): AgentRunReport {
      const base = { text, tokens, costUsd: 0, sessionId, permissionDenials: [], commands, lastLine, events };
      if (!terminal) return { ...base, success: false, error: { class: "agent_error", message: "codex ended without a terminal event" } };
      if (terminal.type === "turn.completed") return { ...base, success: true };
      const err = (terminal.error ?? terminal) as Ev;
      const message = String(err.message ?? terminal.message ?? "turn failed");
      const transient = /\brate[ -]?limit|\b(?:429|5\d\d)\b|overloaded|ECONNRESET|timed? ?out/i.test(message);
      return { ...base, success: false, error: { class: transient ? "transient" : "agent_error", message: `codex: ${message}` } };
    },
  };
}
