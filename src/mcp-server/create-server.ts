/**
 * phaseloop as an MCP server: the tools of tools/ and the runs' summaries as
 * resources, over one workdir. A thin face over the control layer: every
 * tool checks its arguments against its schema and calls one operation; a
 * refusal or a failure is a result with isError, never a crash.
 */
import { Server } from "@modelcontextprotocol/sdk/server";
// Deno's type check does not map the SDK's "./*" export to its .d.ts files (Node's does); it runs them alike
// @ts-ignore TS2307 under `deno check` only
import { CallToolRequestSchema, ErrorCode, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ListToolsRequestSchema, McpError, ReadResourceRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { VERSION } from "../generated/version.ts";
import { ControlError } from "../control/control-error.ts";
import { argumentChecker } from "./check-arguments.ts";
import { errorRecord, formatErrorText } from "./format-error.ts";
import { listSummaries, readSummary, SUMMARY_TEMPLATE } from "./summary-resources.ts";
import type { ToolContext, ToolDefinition } from "./tool-definition.ts";
import { TOOLS } from "./tools/index.ts";

/** What a tool call needs of its request and of the SDK's handler context (typed here: see the import above). */
interface CallRequest {
  params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: string | number } };
}
interface CallExtra {
  signal: AbortSignal;
  sendNotification(notification: { method: "notifications/progress"; params: { progressToken: string | number; progress: number; message?: string } }): Promise<void>;
}
interface CallResult {
  [key: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface ServerOptions {
  /** The workdir, real and absolute (see resolveWorkdir). */
  workdir: string;
  env: Record<string, string | undefined>;
  /** The program that starts phaseloop for a run (default: this one). */
  command?: string[];
  /** Aborts every call in flight (the client went away). */
  signal?: AbortSignal;
  /** Where the server's own notes go (stderr; never stdout, which is the protocol's). */
  log?: (line: string) => void;
}

const INSTRUCTIONS = `phaseloop runs agentic coding loops described in YAML pipelines (phases, their agents and allowlists, where control goes next, when to stop), in this server's workdir.
A usual session: list_recipes or write a pipeline; validate_pipeline; start_run; wait_for_run (again while it says "timeout"); answer_question when it says "question"; read the run's summary (resource phaseloop://runs/RUN_ID/summary) or get_run when it says "finished". stop_run and resume_run stop and continue a run. Runs go on after this session ends.`;

export function createServer(o: ServerOptions): Server {
  const server = new Server({ name: "phaseloop", version: VERSION }, { capabilities: { tools: { listChanged: false }, resources: { listChanged: false } }, instructions: INSTRUCTIONS });
  const check = argumentChecker(TOOLS);
  const byName = new Map(TOOLS.map((t) => [t.name, t]));

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((t) => ({ name: t.name, title: t.annotations.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request: CallRequest, extra: CallExtra): Promise<CallResult> => {
    const tool = byName.get(request.params.name);
    if (!tool) return errorResult(new ControlError("BAD_ARGUMENT", `no tool "${request.params.name}"`, { hint: `the tools: ${TOOLS.map((t) => t.name).join(", ")}` }));
    const signal = anySignal([extra.signal, o.signal]);
    const token = request.params._meta?.progressToken;
    let step = 0;
    const context: ToolContext = {
      workdir: o.workdir,
      env: o.env,
      ...(o.command ? { command: o.command } : {}),
      signal,
      progress: async (message) => {
        if (token === undefined || signal.aborted) return;
        step += 1;
        await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: step, message } });
      },
    };
    try {
      const args = check(tool, request.params.arguments);
      const result = await (tool as ToolDefinition<Record<string, unknown>>).run(args, context);
      // the note goes into the record too: some clients (Claude Code) hand the model the structured content only
      const value = result.note ? { ...result.value, note: result.note } : result.value;
      return { content: [{ type: "text", text: JSON.stringify(value, null, 2) }], structuredContent: value, ...(result.isError ? { isError: true } : {}) };
    } catch (error) {
      if (!(error instanceof ControlError)) o.log?.(`phaseloop mcp: ${tool.name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return errorResult(error);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: await listSummaries(o.workdir) }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: SUMMARY_TEMPLATE, name: "run-summary", title: "A run's summary", description: "summary.md of a phaseloop run: its outcome, iterations, phases, changes and questions", mimeType: "text/markdown" }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request: { params: { uri: string } }) => {
    try {
      return { contents: [await readSummary(o.workdir, request.params.uri)] };
    } catch (error) {
      const record = errorRecord(error);
      throw new McpError(record.code === "UNKNOWN_RUN" || record.code === "BAD_ARGUMENT" ? ErrorCode.InvalidParams : ErrorCode.InternalError, `${record.message}${record.hint ? ` (${record.hint})` : ""}`, record);
    }
  });
  return server;
}

function errorResult(error: unknown): CallResult {
  const record = errorRecord(error);
  return { content: [{ type: "text", text: formatErrorText(record) }], structuredContent: { error: record }, isError: true };
}

/** Aborted when any of the signals is. */
function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  const ac = new AbortController();
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      ac.abort(s.reason);
      break;
    }
    s.addEventListener("abort", () => ac.abort(s.reason), { once: true });
  }
  return ac.signal;
}
