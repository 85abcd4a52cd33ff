/**
 * A phase of the built-in OpenAI-compatible agent, which runs in this process:
 * its transcript goes to stdout.log and the reporter like a process's output,
 * and the commands it runs are processes in the workdir.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { runOpenAiAgent, type ChatMessage } from "../agents/openai/openai-agent.ts";
import type { HostFiles } from "../host/host.ts";
import type { McpToolbox } from "../agents/openai/mcp-client-tools.ts";
import type { CompiledPhase } from "../machine/types.ts";
import { runProcess } from "../host/run-process.ts";
import { LiveOutput } from "./live-output.ts";
import type { PhaseFence } from "./phase-fence.ts";
import type { BuiltinAgent, PhaseRunEffect } from "./phase-invocation.ts";
import type { PhaseExecution } from "./phase-process.ts";
import type { ProcessEnv, RunContext } from "./run-context.ts";

export async function runBuiltinAgentPhase(e: PhaseRunEffect, phase: CompiledPhase, builtin: BuiltinAgent, env: ProcessEnv, dir: string, ctx: RunContext, fence?: PhaseFence): Promise<PhaseExecution> {
  const { default: picomatch } = await import("picomatch");
  const stdoutLog = join(dir, "stdout.log");
  const workdir = ctx.info.workdir;
  const live = new LiveOutput(ctx.emit, e.phase, ctx.host.clock);
  let mcp: McpToolbox | undefined;
  if (builtin.mcp.length > 0) {
    // the phase's MCP servers, started in its sandbox; they end with the phase (the SDK loads only for them)
    const { connectMcpServers } = await import("../agents/openai/mcp-client-tools.ts");
    const connected = await connectMcpServers(builtin.mcp, { env, allowlist: builtin.tools?.mcp, wrap: fence ? async (argv, serverEnv) => {
      const fenced = await fence.wrap(argv, serverEnv as ProcessEnv);
      const merged = Object.entries({ ...serverEnv, ...fenced.env }).filter((kv): kv is [string, string] => kv[1] !== undefined);
      return { argv: fenced.argv, env: Object.fromEntries(merged), done: (stderr) => void fenced.done(stderr) };
    } : undefined });
    if (!connected.ok) {
      ctx.host.files.appendText(stdoutLog, `error: ${connected.message}\n`);
      live.push("stdout", `error: ${connected.message}`);
      live.end();
      return mcpFailure(connected.message);
    }
    mcp = connected.toolbox;
  }
  const session = builtin.session !== undefined ? loadSession(ctx.host.files, ctx.store.dir, builtin.session) : undefined;
  const done = await runOpenAiAgent({
    host: ctx.host,
    agent: builtin.agent,
    prompt: e.prompt ?? "",
    ...(session ? { earlier: session } : {}),
    ...(builtin.outputSchema ? { responseSchema: builtin.outputSchema } : {}),
    tools: builtin.tools,
    workdir,
    env,
    signal: ctx.signal,
    timeoutMs: phase.timeoutMs,
    idleTimeoutMs: phase.idleTimeoutMs ?? undefined,
    onLine: (line) => {
      ctx.host.files.appendText(stdoutLog, `${line}\n`);
      live.push("stdout", line);
    },
    mcp,
    glob: (patterns) => {
      const nonEmpty = patterns.filter((g) => g !== ""); // an empty pattern (an empty param) allows nothing
      return picomatch(nonEmpty.length ? nonEmpty : ["\0"], { dot: true });
    },
    runCommand: async (argv, signal) => {
      // a command has the phase's idle timeout; the phase's own timeout and interrupts stop it through the signal
      // in the phase's OS sandbox, when it has one
      const fenced = fence ? await fence.wrap(argv, env) : undefined;
      const p = await runProcess({
        command: fenced?.argv ?? argv,
        cwd: workdir,
        env: fenced ? Object.assign(Object.create(env) as ProcessEnv, fenced.env) : env,
        signal,
        idleTimeoutMs: phase.idleTimeoutMs ?? undefined,
      });
      fenced?.done(p.stderrTail);
      const output = (p.spawnError ? `${p.spawnError}\n` : "") + p.stdout + (p.stderrTail.trim() ? `\n[stderr]\n${p.stderrTail}` : "");
      return { exitCode: p.exitCode, output, timedOut: p.timedOut || p.idleTimedOut };
    },
  });
  await mcp?.close();
  live.end();
  // the session is its messages, kept in the run folder under a new id (the one continued stays as it was)
  if (done.process.exitCode === 0 || done.messages.length > 2) done.report.sessionId = saveSession(ctx.host.files, ctx.store.dir, done.messages);
  return done;
}

/** The messages of a kept session; undefined when there is none by that id (a fresh session then). */
function loadSession(files: HostFiles, runDir: string, id: string): ChatMessage[] | undefined {
  if (!/^[\w-]+$/.test(id)) return undefined;
  try {
    const messages = JSON.parse(files.readText(join(runDir, "sessions", `${id}.json`))) as unknown;
    return Array.isArray(messages) ? (messages as ChatMessage[]) : undefined;
  } catch {
    return undefined;
  }
}

function saveSession(files: HostFiles, runDir: string, messages: ChatMessage[]): string {
  const id = randomUUID();
  files.mkdir(join(runDir, "sessions"));
  files.writeAtomic(join(runDir, "sessions", `${id}.json`), JSON.stringify(messages));
  return id;
}

/** The phase failed before the model was asked: a server did not start. */
function mcpFailure(message: string): PhaseExecution {
  const stdout = `error: ${message}\n`;
  return {
    process: { exitCode: 1, signal: null, timedOut: false, idleTimedOut: false, aborted: false, durationMs: 0, stdout, stdoutTail: stdout, stderrTail: "", wroteLogs: false },
    report: { text: "", success: false, error: { class: "agent_error", message }, tokens: 0, costUsd: 0, permissionDenials: [], events: 0 },
  };
}
