/**
 * Agents are adapters behind one interface, one file per backend. The runner
 * asks an adapter how to start the agent, feeds it the agent's stdout line by
 * line, and asks it at the end what the agent reported.
 */
import type { AgentOutputFormat, AgentSpec, JsonValue, ToolSetSpec } from "../pipeline/spec.ts";

export interface AgentInvocationInput {
  agent: AgentSpec;
  /** The rendered prompt. */
  prompt: string;
  /** Where the runner wrote the prompt (always written). */
  promptFile: string;
  tools?: ToolSetSpec;
  workdir: string;
  /** Renders `{{ }}` in command elements with the phase context plus `prompt` and `prompt_file`. */
  render: (template: string) => string;
}

export interface AgentInvocation {
  argv: string[];
  /** Text for stdin; undefined closes stdin. */
  stdin?: string;
  env: Record<string, string>;
  outputFormat: AgentOutputFormat;
}

export interface AgentRunReport {
  /** The agent's final message (text agents: the whole stdout, capped). */
  text: string;
  /** A terminal success event was seen; null for text agents (the exit code decides). */
  success: boolean | null;
  error?: { class: "agent_error" | "transient" | "policy_violation"; message: string };
  tokens: number;
  costUsd: number;
  sessionId?: string;
  permissionDenials: { tool: string; input?: unknown }[];
  /** Shell commands the agent ran, where its events say (the first 50). */
  commands?: string[];
  /** A short line for live progress. */
  lastLine?: string;
  events: number;
}

export interface StreamParser {
  push(line: string): void;
  finish(stdout: string): AgentRunReport;
}

export interface AgentAdapter {
  name: string;
  buildInvocation(input: AgentInvocationInput): AgentInvocation;
  createParser(): StreamParser;
  /** argv that prints the agent's version, recorded in run.json. */
  versionArgv?: string[];
}

export type JsonRecord = Record<string, JsonValue>;
