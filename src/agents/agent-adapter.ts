/**
 * Agents are adapters behind one interface. The runner asks an adapter how to
 * start the agent, feeds it the agent's stdout line by line, and asks it at
 * the end what the agent reported. A CLI preset is one description of its
 * CLI in presets/ (argv and allowlist, event decoder, result judge), its
 * traits in pipeline/presets/; the stream-JSON plumbing they share is in
 * stream-json.ts.
 */
import type { McpServer } from "../mcp/mcp-server.ts";
import type { AgentOutputFormat, AgentSpec, JsonValue, ToolSetSpec } from "../pipeline/spec.ts";

export interface AgentInvocationInput {
  agent: AgentSpec;
  /** The rendered prompt. */
  prompt: string;
  /** Where the runner wrote the prompt (always written). */
  promptFile: string;
  tools?: ToolSetSpec;
  /** The JSON Schema of the phase's structured answer (its one `json` output with a `schema`), for CLIs that enforce one. */
  outputSchema?: Record<string, unknown>;
  /** The same schema written to a file, for CLIs that take a path. */
  outputSchemaFile?: string;
  /** The session to continue (its id, as the CLI reported it); undefined starts a fresh one. */
  session?: string;
  workdir: string;
  /** The MCP servers the phase attaches: the agent gets these and no others. */
  mcp?: McpServer[];
  /** Renders `{{ }}` in command elements with the phase context plus `prompt` and `prompt_file`. */
  render: (template: string) => string;
  /**
   * Render a command's argv list (a command agent's `command`): a shell's
   * script (`[sh, -c, "…"]`) with its values in environment variables, put in
   * `env`; a template that would be a program is an error.
   */
  renderArgv?: (templates: string[], env: Record<string, string>) => string[];
}

export interface AgentInvocation {
  argv: string[];
  /** Text for stdin; undefined closes stdin. */
  stdin?: string;
  env: Record<string, string>;
  outputFormat: AgentOutputFormat;
}

/** A tool call the agent's events show: what it touched, and whether the CLI refused it. */
export interface ToolCall {
  /** The CLI's own tool name ("Read", "Bash", "run_shell_command", …). */
  tool: string;
  kind: "read" | "write" | "bash" | "other";
  /** Absolute or workdir-relative paths the call names. */
  paths: string[];
  command?: string;
  /** The call's input as the CLI gave it. */
  input?: unknown;
  /** A search or listing of a directory (Grep, Glob): allowed where readable files lie below it. */
  search?: boolean;
  id?: string;
  /** The CLI refused the call; its reason. */
  refused?: string;
  /** A call of an MCP server's tool: the server where the event names it, else the CLI's full name in `tool`. */
  mcp?: { server?: string; tool: string };
}

export interface AgentRunReport {
  /** The agent's final message (text agents: the whole stdout, capped). */
  text: string;
  /** The structured answer a CLI returned beside its text, under a JSON Schema it enforced (claude `--json-schema`). */
  structured?: unknown;
  /** A terminal success event was seen; null for text agents (the exit code decides). */
  success: boolean | null;
  error?: { class: "agent_error" | "transient" | "policy_violation"; message: string };
  tokens: number;
  costUsd: number;
  sessionId?: string;
  permissionDenials: { tool: string; input?: unknown }[];
  /** Shell commands the agent ran, where its events say (the first 50). */
  commands?: string[];
  /** Every tool call the events show (the first 500), for the after-check. */
  toolCalls?: ToolCall[];
  /** All the assistant's turns, separated, for the phase log. */
  transcript?: string;
  /** A short line for live progress. */
  lastLine?: string;
  /** Structured agents: whether the CLI printed its terminal event (false: its exit code and stderr say why it ended). */
  terminal?: boolean;
  events: number;
}

/** What one line of output meant, for the runner. */
export interface LineInfo {
  /** Human lines to show instead of the raw line (structured agents); [] shows nothing. */
  display?: string[];
  /** The CLI printed its terminal result: it is given a short grace, then ended. */
  terminal?: boolean;
}

export interface StreamParser {
  push(line: string): LineInfo | void;
  /** A line of the agent's stderr (some CLIs say only there that they refused a call). */
  pushStderr?(line: string): LineInfo | void;
  /** The report, once the process ended (with its exit code, null when a signal ended it). */
  finish(stdout: string, exitCode?: number | null): AgentRunReport;
}

export interface AgentAdapter {
  name: string;
  buildInvocation(input: AgentInvocationInput): AgentInvocation;
  createParser(): StreamParser;
  /** argv that prints the agent's version, recorded in run.json. */
  versionArgv?: string[];
}

export type JsonRecord = Record<string, JsonValue>;
