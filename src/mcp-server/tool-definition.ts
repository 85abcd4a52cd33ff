/**
 * One MCP tool of `phaseloop mcp`: its name, a description written for the
 * model that will call it, a JSON Schema of its arguments, its annotations,
 * and what it does, as a thin call into the control layer. Each tool is one
 * definition in its own file, listed in tools/index.ts.
 */
import type { ControlError } from "../control/control-error.ts";

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  /** Whether the tool reaches beyond phaseloop's own files: a run's agents do. */
  openWorldHint: boolean;
}

/** What a tool gets besides its arguments. */
export interface ToolContext {
  /** The workdir the server serves (real, absolute): every path and run is in it. */
  workdir: string;
  /** The environment runs start with. */
  env: Record<string, string | undefined>;
  /** The program that starts phaseloop (default: this one). */
  command?: string[];
  /** Cancelled when the client cancels the call or goes away. */
  signal: AbortSignal;
  /** Tells the client the call is still going (a progress notification, when the client asked for them). */
  progress(message: string): Promise<void>;
}

export interface ToolDefinition<Args = Record<string, unknown>> {
  name: string;
  description: string;
  inputSchema: { type: "object"; properties: Record<string, unknown>; required?: string[]; additionalProperties: false };
  annotations: ToolAnnotations;
  /** The answer, as JSON; a ControlError thrown becomes a result with isError. */
  run(args: Args, context: ToolContext): Promise<ToolAnswer>;
}

/** A tool's answer: the JSON the client gets (as structured content and as text), and whether it reports a failure. */
export interface ToolAnswer {
  value: Record<string, unknown>;
  isError?: boolean;
  /** A sentence for the model (what happened, what to do next), given as the record's `note`. */
  note?: string;
}

export function answer(value: Record<string, unknown>, note?: string): ToolAnswer {
  return note === undefined ? { value } : { value, note };
}

export type { ControlError };
