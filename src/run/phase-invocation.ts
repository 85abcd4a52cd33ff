/**
 * What a phase runs: the shell command or argv of a `run` phase, or an agent's
 * invocation built by its adapter (prompt file, rendered command elements,
 * parser), with the PHASELOOP_* variables in its environment.
 */
import { dirname, join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import type { StreamParser } from "../agents/agent-adapter.ts";
import { parserFor } from "../agents/command-agent.ts";
import { getAdapter, presetEffects } from "../agents/get-adapter.ts";
import { nativeOutputSchema } from "../agents/native-schema.ts";
import { openAiBaseUrl } from "../agents/openai/openai-agent.ts";
import { presetNamed } from "../agents/presets/registry.ts";
import { parseTemplate, renderArgv, renderTemplate, type Template } from "../expr/index.ts";
import type { CompiledPhase, Effect } from "../machine/types.ts";
import { phaseMcpServers, type McpServer } from "../mcp/mcp-server.ts";
import type { AgentSpec, ErrorClass, JsonValue, ToolSetSpec } from "../pipeline/spec.ts";
import type { ProcessEnv, RunContext } from "./run-context.ts";
import { ensureArtifacts, withArtifacts } from "./run-artifacts.ts";

export type PhaseRunEffect = Extract<Effect, { type: "phase.run" }>;

/** The built-in agent, which runs in this process. */
export interface BuiltinAgent {
  agent: AgentSpec;
  tools: ToolSetSpec | undefined;
  /** The session (kept messages) to continue. */
  session?: string;
  /** The JSON Schema the answer must follow. */
  outputSchema?: Record<string, unknown>;
  /** The MCP servers the phase attaches; the agent is their client. */
  mcp: McpServer[];
}

export interface PhaseInvocation {
  /** What runs: argv, or the shell command (for the built-in agent, a description of its server). */
  command: string | string[];
  stdin?: string;
  env: ProcessEnv;
  /** Reads the agent's stdout line by line (plain text for `run` phases). */
  parser: StreamParser;
  builtin?: BuiltinAgent;
}

export type PreparedPhase = { ok: true; invocation: PhaseInvocation } | { ok: false; error: ErrorClass; message: string };

/**
 * Parsed templates of the pipeline's agent commands, tool globs and MCP
 * arguments, which every phase of the agent renders again: parsed once.
 * Bounded, though a pipeline has few.
 */
const parsed = new Map<string, ReturnType<typeof parseTemplate>>();
function parsedTemplate(text: string): ReturnType<typeof parseTemplate> {
  let t = parsed.get(text);
  if (t === undefined) {
    if (parsed.size >= 1000) parsed.clear();
    t = parseTemplate(text);
    parsed.set(text, t);
  }
  return t;
}

/** Where an invocation's files go: the run writes them; a dry run (plan-run.ts) only names them. */
export interface InvocationFiles {
  /** The run's artifacts folder, absolute (made if need be). */
  artifacts(workdir: string, runId: string): string;
  write(path: string, text: string): void;
}

/** The invocation's files written on the host. */
function writtenFiles(files: HostFiles): InvocationFiles {
  return {
    artifacts: (workdir, runId) => ensureArtifacts(workdir, runId, files),
    write(path, text) {
      files.mkdir(dirname(path));
      files.writeText(path, text);
    },
  };
}

/** Prepare a phase's invocation; `dir` is its artifact directory (phases/NNNN-PHASE/). */
export function preparePhase(e: PhaseRunEffect, phase: CompiledPhase, dir: string, ctx: RunContext, files: InvocationFiles = writtenFiles(ctx.host.files)): PreparedPhase {
  const { machine, info } = ctx;
  let command: string | string[];
  let stdin: string | undefined;
  const env = ctx.env(e.env);
  let parser = parserFor("text");
  let builtin: BuiltinAgent | undefined;
  // every phase may write the run's artifacts folder
  const artifacts = files.artifacts(info.workdir, info.run_id);
  const toolSet = withArtifacts(phase.tools ? machine.tools[phase.tools] : undefined, info.run_id);
  if (phase.kind === "agent") {
    const spec = machine.agents[phase.agent!]!;
    const promptFile = join(dir, "prompt.md");
    files.write(promptFile, e.prompt ?? "");
    const extra = { prompt: e.prompt ?? "", prompt_file: promptFile };
    let renderError: string | undefined;
    let context: Record<string, JsonValue> | undefined;
    const render = (text: string): string => {
      const t = parsedTemplate(text);
      if (!t.template) {
        renderError ??= t.diagnostics[0]?.message;
        return text;
      }
      if (t.template.parts.every((p) => p.kind === "text")) return t.template.parts.map((p) => (p.kind === "text" ? p.text : "")).join("");
      const r = renderTemplate(t.template, (context ??= { ...e.context, ...extra }));
      if (!r.ok) renderError ??= r.error;
      return r.ok ? r.value : "";
    };
    const renderArgvList = (texts: string[], into: Record<string, string>): string[] => {
      const templates = texts.map((x) => parsedTemplate(x).template);
      if (templates.some((x) => !x)) return texts.map(render);
      const r = renderArgv(templates as Template[], (context ??= { ...e.context, ...extra }));
      if (!r.ok) {
        renderError ??= r.error.replace(/^run\[/, "command[");
        return [];
      }
      Object.assign(into, r.env);
      return r.argv;
    };
    // the phase's model (a tier resolved when the pipeline was compiled) in place of the agent's,
    // rendered like the prompt (`model: "{{ params.model }}"`); a tier it renders to is resolved now
    const rendered = phase.model !== undefined && phase.model.includes("{{") ? render(phase.model) || undefined : phase.model;
    const model = rendered !== undefined && spec.models && Object.hasOwn(spec.models, rendered) ? spec.models[rendered] : rendered;
    const agent = model !== spec.model ? { ...spec, model } : spec;
    const tools = toolSet ? { ...toolSet, write: toolSet.write?.map(render), read: toolSet.read?.map(render), bash: toolSet.bash?.map(render) } : undefined;
    // the schema the agent enforces itself, when every other output can still be read
    const outputSchema = nativeOutputSchema(phase.output, agent.command ? undefined : agent.preset);
    env.PHASELOOP_SESSION = e.session ?? "";
    const mcp = phaseMcpServers(phase.mcp, machine.mcp, info.workdir, render);
    if (presetNamed(agent.preset)?.builtin) {
      // the built-in agent runs in this process; the phase.started event names its server
      builtin = { agent, tools, mcp, ...(e.session !== undefined ? { session: e.session } : {}), ...(outputSchema ? { outputSchema } : {}) };
      command = `openai-compatible ${openAiBaseUrl(agent)}/chat/completions${agent.model ? ` model ${agent.model}` : ""}`;
    } else {
      let adapter;
      try {
        adapter = getAdapter(agent, presetEffects(ctx.host));
      } catch (error) {
        return { ok: false, error: "spawn_error", message: (error as Error).message };
      }
      let inv;
      try {
        const outputSchemaFile = outputSchema ? join(dir, "output-schema.json") : undefined;
        if (outputSchemaFile) files.write(outputSchemaFile, JSON.stringify(outputSchema, null, 2) + "\n");
        inv = adapter.buildInvocation({ agent, prompt: e.prompt ?? "", promptFile, tools, outputSchema, outputSchemaFile, session: e.session, workdir: info.workdir, render, renderArgv: renderArgvList, mcp });
      } catch (error) {
        // a preset that cannot write its private configuration
        return { ok: false, error: "spawn_error", message: `cannot start agent "${phase.agent}": ${(error as Error).message}` };
      }
      command = inv.argv;
      stdin = inv.stdin;
      Object.assign(env, inv.env);
      parser = adapter.name === "command" ? parserFor(inv.outputFormat) : adapter.createParser();
    }
    if (renderError) return { ok: false, error: "spawn_error", message: `cannot render agent "${phase.agent}": ${renderError}` };
  } else {
    command = e.command!;
  }
  env.PHASELOOP_RUN_ID = info.run_id;
  env.PHASELOOP_ITERATION = String(e.iteration);
  env.PHASELOOP_PHASE = e.phase;
  env.PHASELOOP_ATTEMPT = String(e.attempt);
  env.PHASELOOP_TASK = ctx.snapshot.currentTask ?? "";
  env.PHASELOOP_PHASE_DIR = dir;
  env.PHASELOOP_ARTIFACTS = artifacts;
  return { ok: true, invocation: { command, stdin, env, parser, builtin } };
}
