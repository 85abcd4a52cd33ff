/**
 * The built-in agent for OpenAI-compatible chat completions servers (Ollama,
 * llama.cpp, vLLM, LM Studio, hosted APIs): `POST {base_url}/chat/completions`
 * with the phase's tool set as function tools, run until the model answers
 * without calling a tool. It runs inside phaseloop rather than as a process;
 * the commands it runs are processes, in the workdir, each in its own group.
 *
 * What the runner gets back has the shape of a finished process plus an agent
 * report, so timeouts, interrupts, transient failures and outputs are handled
 * exactly as for the other agents.
 */
import type { AgentSpec, ToolSetSpec } from "../../pipeline/spec.ts";
import type { ProcessResult } from "../../host/run-process.ts";
import type { Host } from "../../host/host.ts";
import type { AgentRunReport } from "../agent-adapter.ts";
import type { McpToolbox } from "./mcp-client-tools.ts";
import { type CommandRunner, createAgentTools } from "./agent-tools.ts";
import { ChatStream } from "./chat-stream.ts";
import { textToolCalls } from "./text-tool-calls.ts";
import { isTransientText } from "../../runtime/classify-failure.ts";

export const OPENAI_DEFAULTS = {
  baseUrl: "http://localhost:11434/v1",
  apiKeyEnv: "OPENAI_API_KEY",
  /** Model turns in one phase; a model still calling tools after this many fails the phase. */
  maxRounds: 50,
} as const;

export interface OpenAiAgentInput {
  agent: AgentSpec;
  prompt: string;
  /** The phase's tool set, its globs rendered. Without one the model gets no tools. */
  tools?: ToolSetSpec;
  workdir: string;
  env: Record<string, string | undefined>;
  signal?: AbortSignal;
  /** The whole phase. */
  timeoutMs?: number;
  /** One request: no answer from the server for this long. */
  idleTimeoutMs?: number;
  /** Transcript lines, as they happen. */
  onLine?: (line: string) => void;
  glob: (patterns: string[]) => (path: string) => boolean;
  runCommand: CommandRunner;
  fetch?: typeof fetch;
  maxRounds?: number;
  /** Ask for a streamed answer (default true; a server that refuses gets plain requests). */
  stream?: boolean;
  /** The messages of the session this phase continues (its system message is replaced by this phase's). */
  earlier?: ChatMessage[];
  /** The JSON Schema the final answer must follow, sent as `response_format`. */
  responseSchema?: Record<string, unknown>;
  /** The tools of the phase's MCP servers (connected by the caller, who also closes them). */
  mcp?: McpToolbox;
  /** Files (what list_files reads) and the clock: the runner's host. */
  host: Pick<Host, "files" | "clock">;
}

export interface OpenAiAgentResult {
  process: ProcessResult;
  report: AgentRunReport;
  /** The session's messages at the end, the final answer included: what a later phase continues. */
  messages: ChatMessage[];
}

interface ToolCall {
  id: string;
  type?: string;
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

type Failure = { class: "agent_error" | "transient"; message: string };

class RequestFailed extends Error {
  readonly failure: Failure;
  constructor(failure: Failure) {
    super(failure.message);
    this.failure = failure;
  }
}

export function openAiBaseUrl(agent: AgentSpec): string {
  return (agent.base_url ?? OPENAI_DEFAULTS.baseUrl).replace(/\/+$/, "");
}

export async function runOpenAiAgent(input: OpenAiAgentInput): Promise<OpenAiAgentResult> {
  const { clock } = input.host;
  const started = clock.now();
  const base = openAiBaseUrl(input.agent);
  const doFetch = input.fetch ?? fetch;
  const lines: string[] = [];
  const say = (text: string) => {
    for (const line of text.split("\n")) {
      lines.push(line);
      input.onLine?.(line);
    }
  };
  const report: AgentRunReport = { text: "", success: null, tokens: 0, costUsd: 0, permissionDenials: [], events: 0 };
  let timedOut = false;
  let idleTimedOut = false;
  let aborted = false;
  const phase = new AbortController();
  const onAbort = () => {
    aborted = true;
    phase.abort();
  };
  if (input.signal?.aborted) onAbort();
  input.signal?.addEventListener("abort", onAbort);
  const wall = input.timeoutMs
    ? clock.setTimer(() => {
        timedOut = true;
        phase.abort();
      }, input.timeoutMs)
    : undefined;

  const own = createAgentTools({ tools: input.tools, workdir: input.workdir, glob: input.glob, runCommand: (argv) => input.runCommand(argv, phase.signal), files: input.host.files });
  const mcp = input.mcp;
  const tools = mcp ? { definitions: [...own.definitions, ...mcp.definitions], call: (name: string, args: string) => (mcp.handles(name) ? mcp.call(name, args) : own.call(name, args)) } : own;
  const toolNames = tools.definitions.map((d) => d.function.name);
  const apiKey = input.env[input.agent.api_key_env ?? OPENAI_DEFAULTS.apiKeyEnv] || "phaseloop"; // local servers want any non-empty key
  const messages: ChatMessage[] = [
    { role: "system", content: systemPrompt(toolNames) },
    ...(input.earlier ?? []).filter((m) => m && m.role !== "system"),
    { role: "user", content: input.prompt },
  ];

  const finish = (failure?: Failure): OpenAiAgentResult => {
    if (wall !== undefined) clock.clearTimer(wall);
    input.signal?.removeEventListener("abort", onAbort);
    if (failure) {
      report.success = false;
      report.error = failure;
      say(`error: ${failure.message}`);
    }
    const stdout = lines.join("\n") + (lines.length ? "\n" : "");
    const ended = !timedOut && !idleTimedOut && !aborted;
    return {
      messages,
      report: { ...report, lastLine: lines.filter((l) => l.trim()).pop() },
      process: { exitCode: ended ? 0 : null, signal: ended ? null : "SIGTERM", timedOut, idleTimedOut, aborted, durationMs: clock.now() - started, stdout, stdoutTail: stdout.slice(-64 * 1024), stderrTail: "", wroteLogs: false },
    };
  };

  if (!input.agent.model) return finish({ class: "agent_error", message: "the openai agent needs a model (agents.NAME.model)" });
  const maxRounds = input.maxRounds ?? OPENAI_DEFAULTS.maxRounds;
  let streaming = input.stream ?? true;
  try {
    for (let round = 1; round <= maxRounds; round++) {
      const answer = await request();
      report.events += 1;
      const message = answer.message;
      let calls = (message.tool_calls ?? []).filter((c) => c && typeof c.function?.name === "string");
      if (calls.length === 0) {
        // a local model may write its calls in the text; read them as calls
        const fromText = textToolCalls(message.content, toolNames);
        if (fromText.length > 0) {
          calls = fromText.map((c, i) => ({ id: `text_call_${round}_${i + 1}`, type: "function", function: c }));
          say(`(${fromText.length} tool call${fromText.length === 1 ? "" : "s"} read from the model's text)`);
        }
      }
      if (!answer.streamed && message.content?.trim() && !(calls.length > 0 && !message.tool_calls?.length)) say(message.content.trim());
      if (calls.length === 0) {
        report.text = message.content ?? "";
        messages.push({ role: "assistant", content: message.content ?? "" });
        report.success = true;
        // as with the CLI agents: a call the tool set refused fails the phase (the answer is kept for its outputs)
        if (report.permissionDenials.length > 0) {
          const denials = report.permissionDenials;
          const refused = denials.slice(0, 5).map((d) => `${d.tool} ${summarise(JSON.stringify(d.input ?? ""))}`).join("; ") + (denials.length > 5 ? `; and ${denials.length - 5} more` : "");
          report.error = { class: "policy_violation", message: `the tool set refused ${report.permissionDenials.length} call${report.permissionDenials.length === 1 ? "" : "s"}: ${refused}` };
        }
        return finish();
      }
      // the assistant turn goes back verbatim, then one tool message per call
      messages.push({ role: "assistant", content: message.content ?? null, tool_calls: calls });
      for (const call of calls) {
        if (phase.signal.aborted) return finish();
        const outcome = await tools.call(call.function.name, call.function.arguments ?? "");
        say(`→ ${call.function.name} ${summarise(call.function.arguments)}${outcome.refused ? ` — refused: ${outcome.refused}` : ""}`);
        if (outcome.refused) report.permissionDenials.push({ tool: call.function.name, input: safeParse(call.function.arguments) });
        messages.push({ role: "tool", tool_call_id: call.id, content: outcome.content });
      }
    }
    return finish({ class: "agent_error", message: `the model was still calling tools after ${maxRounds} turns` });
  } catch (error) {
    if (error instanceof RequestFailed) return finish(error.failure);
    if (timedOut || idleTimedOut || aborted) return finish();
    return finish({ class: "agent_error", message: (error as Error).message });
  }

  /**
   * One model turn. Streamed when the server can (the text shows as it comes,
   * and the idle timeout counts from the last chunk, not from the request); a
   * server that refuses a streamed request gets plain ones from then on.
   */
  async function request(): Promise<{ message: ChatMessage; streamed: boolean }> {
    const call = new AbortController();
    const stop = () => call.abort();
    phase.signal.addEventListener("abort", stop);
    let idle: ReturnType<typeof setTimeout> | undefined;
    const armIdle = () => {
      if (!input.idleTimeoutMs) return;
      clearTimeout(idle);
      idle = setTimeout(() => {
        idleTimedOut = true;
        call.abort();
      }, input.idleTimeoutMs);
    };
    armIdle();
    try {
      const post = async (stream: boolean): Promise<Response> => {
        try {
          return await doFetch(`${base}/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
            body: JSON.stringify({
              model: input.agent.model,
              messages,
              ...(tools.definitions.length ? { tools: tools.definitions, tool_choice: "auto" } : {}),
              ...(input.responseSchema ? { response_format: { type: "json_schema", json_schema: { name: "phase_output", schema: input.responseSchema } } } : {}),
              stream,
              ...(stream ? { stream_options: { include_usage: true } } : {}),
            }),
            signal: call.signal,
          });
        } catch (error) {
          if (call.signal.aborted) throw error;
          // Deno without --allow-net: not a network failure, and waiting will not help
          const name = (error as Error).name;
          if (name === "NotCapable" || name === "PermissionDenied") throw new RequestFailed({ class: "agent_error", message: `${(error as Error).message} (the openai agent needs --allow-net under Deno)` });
          const cause = (error as { cause?: { code?: string; message?: string } }).cause;
          throw new RequestFailed({ class: "transient", message: `cannot reach ${base}: ${cause?.code ?? cause?.message ?? (error as Error).message}` });
        }
      };
      let response = await post(streaming);
      if (streaming && (response.status === 400 || response.status === 422)) {
        // a server without streaming (or without stream_options): plain requests from now on
        await response.text().catch(() => "");
        streaming = false;
        response = await post(false);
      }
      if (!response.ok) {
        const body = await response.text();
        const what = `HTTP ${response.status} from ${base}: ${errorText(body)}`;
        const transient = response.status === 408 || response.status === 409 || response.status === 429 || response.status >= 500;
        throw new RequestFailed({ class: transient ? "transient" : "agent_error", message: what });
      }
      if ((response.headers.get("content-type") ?? "").includes("text/event-stream") && response.body) {
        const chat = new ChatStream(say);
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          armIdle();
          chat.push(decoder.decode(value, { stream: true }));
        }
        chat.push(decoder.decode());
        chat.end();
        if (chat.error) throw new RequestFailed({ class: isTransientText(chat.error) ? "transient" : "agent_error", message: `${base}: ${chat.error}` });
        const usage = chat.usage;
        if (usage) report.tokens += usage.total_tokens ?? (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0);
        if (!chat.finished) throw new RequestFailed({ class: "transient", message: `the stream from ${base} ended before the answer did` });
        return { message: chat.message(), streamed: true };
      }
      const body = await response.text();
      let parsed: { choices?: { message?: ChatMessage }[]; usage?: { total_tokens?: number; prompt_tokens?: number; completion_tokens?: number } };
      try {
        parsed = JSON.parse(body);
      } catch {
        throw new RequestFailed({ class: "agent_error", message: `the answer from ${base} is not JSON: ${body.slice(0, 200)}` });
      }
      const usage = parsed.usage;
      if (usage) report.tokens += usage.total_tokens ?? (usage.prompt_tokens ?? 0) + (usage.completion_tokens ?? 0);
      const message = parsed.choices?.[0]?.message;
      if (!message || typeof message !== "object") throw new RequestFailed({ class: "agent_error", message: `the answer from ${base} has no message` });
      return { message, streamed: false };
    } finally {
      clearTimeout(idle);
      phase.signal.removeEventListener("abort", stop);
    }
  }
}

function systemPrompt(toolNames: string[]): string {
  if (toolNames.length === 0) return "You are a careful software engineer. Answer the request; you cannot read or change files in this step.";
  return [
    "You are a careful software engineer working in a code workspace.",
    `Use the tools (${toolNames.join(", ")}) to read and change files and to run the allowed commands; paths are relative to the workspace root.`,
    "A refused call tells you why: do not repeat it. When the work is done, answer without calling a tool, with a short report of what you did.",
  ].join("\n");
}

function summarise(argumentsJson: string | undefined): string {
  const args = safeParse(argumentsJson);
  if (args && typeof args === "object" && !Array.isArray(args)) {
    const a = args as Record<string, unknown>;
    const main = a.path ?? a.command;
    if (typeof main === "string") return main.length > 120 ? `${main.slice(0, 120)}…` : main;
  }
  const text = argumentsJson ?? "";
  return text.length > 120 ? `${text.slice(0, 120)}…` : text;
}

function safeParse(text: string | undefined): unknown {
  try {
    return JSON.parse(text ?? "");
  } catch {
    return text;
  }
}

function errorText(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string } | string; message?: string };
    const e = parsed.error;
    const text = typeof e === "string" ? e : (e?.message ?? parsed.message);
    if (text) return text.slice(0, 300);
  } catch {
    // not JSON
  }
  return body.trim().slice(0, 300) || "(empty body)";
}
