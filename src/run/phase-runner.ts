/**
 * One phase, start to end: the phase.run effect in, its PhaseResult out, with
 * the run events it implies (phase.started, live output, policy.violation,
 * phase.finished) reported through the context. The steps each have their
 * module: what runs (phase-invocation), running it (phase-process, or
 * builtin-agent-phase for the in-process agent), what it changed
 * (phase-changes); this one classifies the outcome and reads the outputs.
 */
import { basename, join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import type { PhaseResult } from "../machine/types.ts";
import type { AgentRunReport } from "../agents/agent-adapter.ts";
import { checkToolCalls, type GlobMatcher } from "../agents/tool-check.ts";
import { checkMcpCalls } from "../agents/check-mcp-calls.ts";
import type { ErrorClass } from "../pipeline/spec.ts";
import { classifyProcess } from "../runtime/classify-failure.ts";
import type { ProcessResult } from "../host/run-process.ts";
import { extractOutputs, type SchemaCheck } from "../runtime/extract-output.ts";
import { renderTemplate, type JsonValue } from "../expr/index.ts";
import { readInside } from "../host/read-inside.ts";
import { readInside as readOutputInside } from "../host/open-inside.ts";
import { resolveInside } from "../host/resolve-inside.ts";
import { runBuiltinAgentPhase } from "./builtin-agent-phase.ts";
import { measurePhaseChanges, openWriteScope } from "./phase-changes.ts";
import { openFence, sandboxesRunning, type PhaseFence } from "./phase-fence.ts";
import { isPlaceholder } from "./sandbox-placeholders.ts";
import { preparePhase, type PhaseRunEffect } from "./phase-invocation.ts";
import { runPhaseProcess, type PhaseExecution } from "./phase-process.ts";
import type { RunContext } from "./run-context.ts";
import { withArtifacts } from "./run-artifacts.ts";
import { agentChoices } from "./agent-choices.ts";

/** Carry out a phase.run effect. Undefined when the run was interrupted: the phase re-runs on resume. */
export async function runPhase(effect: PhaseRunEffect, ctx: RunContext): Promise<PhaseResult | undefined> {
  let e = effect;
  const { machine, info, store } = ctx;
  const phase = machine.phases.find((p) => p.name === e.phase)!;
  const workdir = info.workdir;
  const dir = store.phaseDir(e.seq, e.phase);
  const base: Omit<PhaseResult, "exit_code" | "error" | "message"> = { output: {}, text: "", output_tail: "", tokens: 0, cost_usd: 0, duration_ms: 0, changes: ctx.snapshot.iterationChanges, jitter: Math.random() };
  const failEarly = (error: ErrorClass, message: string): PhaseResult => {
    ctx.emit(finishedEvent(e, { ...base, exit_code: null, error, message }, []));
    return { ...base, exit_code: null, error, message, output_tail: message };
  };

  // output files are cleared first, so a stale file is never read as fresh
  const outputPaths: Record<string, string> = {};
  for (const [name, rel] of Object.entries(e.outputFiles)) {
    const abs = resolveInside(workdir, rel);
    if (!abs) return failEarly("policy_violation", `output file "${rel}" is outside the workdir`);
    outputPaths[name] = abs;
    if (ctx.host.files.lstat(abs)) ctx.changes?.touched();
    ctx.host.files.remove(abs, { force: true });
  }

  // a prompt with file() is rendered here, where the files can be read
  if (e.promptReadsFiles && phase.prompt) {
    const r = renderTemplate(phase.prompt, e.context, { env: { readFile: (path, max) => readInside(workdir, path, max) } });
    if (!r.ok) return failEarly("spawn_error", `cannot render the prompt of phase "${e.phase}": ${r.error}`);
    e = { ...e, prompt: r.value };
  }

  const prepared = preparePhase(e, phase, dir, ctx);
  if (!prepared.ok) return failEarly(prepared.error, prepared.message);
  const inv = prepared.invocation;
  const toolSet = phase.tools ? machine.tools[phase.tools] : undefined;
  // in a parallel group the other members' write globs are theirs: changes there are not this member's
  const scope = openWriteScope(toolSet && e.groupWrite?.length ? { ...toolSet, write: [...(toolSet.write ?? []), ...e.groupWrite] } : toolSet, e.context, ctx);
  let fence: PhaseFence | undefined;
  try {
    // the sandbox lets a member write its own globs only
    const own = scope ? scope.globs.slice(0, scope.globs.length - (e.groupWrite?.length ?? 0)) : [];
    // a member without a tool set may write anywhere: to the others it is a member whose globs reach everything
    const members = e.group !== undefined ? (machine.phases.find((p) => p.name === e.group)?.members ?? []) : [];
    const unscoped = members.some((m) => m !== phase.name && machine.phases.find((p) => p.name === m)?.tools === undefined);
    const others = [...(scope ? scope.globs.slice(own.length) : []), ...(unscoped ? ["**"] : [])];
    fence = await openFence(phase, toolSet ? own : undefined, inv.env, ctx, ctx.sandboxFlag, inv.command, toolSet && e.group !== undefined ? { own, others } : undefined);
  } catch (error) {
    return failEarly("spawn_error", (error as Error).message);
  }

  ctx.emit({ type: "phase.started", iteration: e.iteration, phase: e.phase, attempt: e.attempt, kind: phase.kind, dir: basename(dir), command: inv.command, sandbox: fence !== undefined, ...agentChoices(phase, e) });
  let execution: PhaseExecution;
  try {
    execution = inv.builtin ? await runBuiltinAgentPhase(e, phase, inv.builtin, inv.env, dir, ctx, fence) : await runPhaseProcess(e, phase, inv, dir, ctx, fence);
  } finally {
    fence?.close();
  }
  const { process: r, report } = execution;
  if (r.aborted && ctx.interrupted()) return undefined;

  // measured changes, and the write scope of the tool allowlist; what the fence let through
  // outside the globs is undone here, before anything reads it.
  // phases sandboxed at the same time leave placeholders of protected names while they run
  // a member that staged folders wrote the workdir itself only where no other member may: a change elsewhere is another's
  const { changes, violation, undone } = await measurePhaseChanges(e.phase, scope, ctx, sandboxesRunning() ? (p) => isPlaceholder(ctx.host.files, workdir, p) : undefined, fence?.profile.allowWrite, fence?.mine);

  const text = phase.kind === "agent" ? report.text : r.stdout;
  let failure: { error: ErrorClass; message: string } | null = judgeAgent(r, report, classifyProcess(r, phase.successExitCodes, phase.transient), phase.kind === "agent");
  // reads and commands outside the tool set, whether the CLI enforced it or not
  const outside = toolSet && report.toolCalls ? checkToolCalls(report.toolCalls, withArtifacts(toolSet, info.run_id)!, workdir, await globMatcher()) : [];
  if (report.toolCalls) outside.push(...checkMcpCalls(report.toolCalls, phase.mcp ?? [], toolSet?.mcp));
  if (outside.length > 0 && (!failure || failure.error !== "policy_violation")) failure = { error: "policy_violation", message: `${outside.slice(0, 5).join("; ")}${outside.length > 5 ? ` (and ${outside.length - 5} more)` : ""}` };
  // what the OS sandbox refused: the phase tried to leave its tool set, whatever else it did
  const refused = [...(fence?.refused ?? []), ...(undone ?? []).map((p) => `write ${join(workdir, p)} (outside the write globs: undone)`)];
  if (refused.length > 0) {
    const said = `the OS sandbox refused ${refused.slice(0, 5).join("; ")}${refused.length > 5 ? ` (and ${refused.length - 5} more)` : ""}`;
    ctx.emit({ type: "sandbox.refused", phase: e.phase, refused });
    // on_refusal: warn keeps the phase's result; every refusal is still recorded and shown
    if ((phase.onRefusal ?? machine.onRefusal ?? "fail") === "warn") ctx.emit({ type: "note", level: "warning", message: `${e.phase}: ${said} (on_refusal: warn)` });
    else failure = failure?.error === "policy_violation" ? { error: "policy_violation", message: `${failure.message}; ${said}` } : { error: "policy_violation", message: said };
  }
  if (report.transcript) writeTranscript(ctx.host.files, dir, report.transcript);
  if (failure?.error === "policy_violation" && refused.length === 0 && (report.permissionDenials.length > 0 || outside.length > 0) && toolSet?.on_violation === "warn") {
    // the tool set asks only to hear of it
    ctx.emit({ type: "note", level: "warning", message: `${failure.message} (on_violation: warn)` });
    failure = null;
  }

  // outputs: read only after the process ended
  const files: Record<string, string | undefined> = {};
  // read again through the resolver: an agent may have put a link where the file was
  for (const [name, abs] of Object.entries(outputPaths)) files[abs] = readOutputFile(workdir, e.outputFiles[name]!);
  const needsSchema = phase.outputSchema !== undefined || Object.values(phase.output).some((o) => o.schema);
  const structured = phase.kind === "agent" && report.structured !== undefined ? { structured: report.structured as JsonValue } : {};
  const extracted = extractOutputs(phase.output, { text, stdout: r.stdout, stderr: r.stderrTail, files, ...structured }, outputPaths, needsSchema ? await schemaChecker() : undefined, phase.outputSchema);
  if (!failure && extracted.errors.length > 0) failure = { error: "output_invalid", message: extracted.errors.map((x) => x.message).join("; ") };

  if (violation) failure ??= violation;

  const result: PhaseResult = {
    exit_code: r.exitCode,
    // a phase that broke its tool set decides nothing: no verdict is read from it
    output: failure?.error === "policy_violation" ? {} : extracted.output,
    text,
    error: failure?.error ?? null,
    message: failure?.message ?? null,
    output_tail: (r.stdoutTail.slice(-3000) + (r.stderrTail.trim() ? `\n[stderr]\n${r.stderrTail.slice(-1500)}` : "")).trim(),
    tokens: report.tokens,
    cost_usd: report.costUsd,
    duration_ms: r.durationMs,
    changes,
    jitter: Math.random(),
    command: phase.kind === "run" ? (typeof inv.command === "string" ? inv.command : inv.command.join(" ")) : null,
    commands: report.commands ?? [],
    denied: report.permissionDenials.slice(0, 20).map((d) => `${d.tool}${d.input !== undefined ? `: ${JSON.stringify(d.input).slice(0, 300)}` : ""}`),
    ...(report.sessionId ? { session_id: report.sessionId } : {}),
  };
  // the extracted output, when there is any to keep
  if (Object.keys(phase.output).length > 0 || failure || report.tokens > 0 || phase.kind === "agent" || r.wroteLogs) {
    writeInPhaseDir(ctx.host.files, dir, "output.json", JSON.stringify({ status: failure ? "failed" : "succeeded", error: result.error, message: result.message, exit_code: r.exitCode, output: result.output, tokens: result.tokens, cost_usd: result.cost_usd, ...agentChoices(phase, e), session_id: report.sessionId ?? null, permission_denials: report.permissionDenials }, null, 2) + "\n");
  }
  ctx.emit(finishedEvent(e, result, changes));
  return result;
}

function finishedEvent(e: PhaseRunEffect, r: PhaseResult, changes: string[]): Record<string, unknown> & { type: "phase.finished" } {
  return {
    type: "phase.finished",
    iteration: e.iteration,
    phase: e.phase,
    attempt: e.attempt,
    status: r.error ? "failed" : "succeeded",
    error: r.error,
    message: r.message ?? null,
    exit_code: r.exit_code,
    duration_ms: r.duration_ms,
    tokens: r.tokens,
    cost_usd: r.cost_usd,
    output: r.output,
    changes,
  };
}

/**
 * A structured agent (one whose parser read a terminal event) is judged by
 * that event, not by its exit code or a pattern over its output; only a
 * process that could not start or ran out of time fails first.
 */
function judgeAgent(r: ProcessResult, report: AgentRunReport, byProcess: { error: ErrorClass; message: string } | null, agent: boolean): { error: ErrorClass; message: string } | null {
  if (report.success === null) {
    // a text agent (aider, a command) that failed: its last words on stderr say why
    const why = agent && byProcess?.error === "exit_nonzero" ? lastStderrLine(r.stderrTail) : undefined;
    if (why && byProcess) return { error: byProcess.error, message: `${byProcess.message}: ${why}` };
    return byProcess ?? (report.error ? { error: report.error.class, message: report.error.message } : null);
  }
  if (r.spawnError || r.timedOut || r.idleTimedOut) return byProcess;
  if (report.success === false && report.terminal === false) {
    // the CLI ended before its terminal event: its exit code and last words on stderr say why
    const why = lastStderrLine(r.stderrTail);
    return { error: report.error?.class ?? "agent_error", message: `${report.error?.message ?? "the agent ended without a result"} (${r.exitCode !== null ? `exit code ${r.exitCode}` : `killed by ${r.signal ?? "a signal"}`})${why ? `: ${why}` : ""}` };
  }
  if (report.success === false) return { error: report.error?.class ?? "agent_error", message: report.error?.message ?? "the agent reported failure" };
  if (report.error) return { error: report.error.class, message: report.error.message };
  // a success result: the exit code still counts, unless phaseloop ended the CLI after its result
  return r.endedAfterResult ? null : byProcess;
}

/** The last line of stderr that says something: not a stack frame, a startup timing or a terminal warning. */
function lastStderrLine(tail: string): string | undefined {
  const lines = tail.split("\n").map((l) => l.trim()).filter((l) => l && !/^at\s|^\[STARTUP\]|^Warning: .*color|^\^|^}|^{$/.test(l));
  const line = lines[lines.length - 1];
  return line === undefined ? undefined : line.length > 400 ? `${line.slice(0, 399)}…` : line;
}

/** Write a file of the phase's folder, made first only when it is not there (an agent phase's is, since its prompt). */
function writeInPhaseDir(files: HostFiles, dir: string, name: string, text: string): void {
  try {
    files.writeText(join(dir, name), text);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    files.mkdir(dir);
    files.writeText(join(dir, name), text);
  }
}

function writeTranscript(files: HostFiles, dir: string, transcript: string): void {
  try {
    writeInPhaseDir(files, dir, "transcript.md", transcript.endsWith("\n") ? transcript : `${transcript}\n`);
  } catch {
    // the transcript is a convenience: the stdout log has everything
  }
}

let globMatch: GlobMatcher | undefined;
async function globMatcher(): Promise<GlobMatcher> {
  if (globMatch) return globMatch;
  const { default: picomatch } = await import("picomatch");
  globMatch = (globs) => picomatch(globs, { dot: true });
  return globMatch;
}

let ajvCheck: SchemaCheck | undefined;
async function schemaChecker(): Promise<SchemaCheck> {
  if (ajvCheck) return ajvCheck;
  const { Ajv } = await import("ajv");
  const ajv = new Ajv({ allErrors: true, strict: false });
  const cache = new Map<string, ReturnType<typeof ajv.compile>>();
  ajvCheck = (schema, value) => {
    const key = JSON.stringify(schema);
    let v = cache.get(key);
    if (!v) cache.set(key, (v = ajv.compile(schema)));
    return v(value) ? undefined : ajv.errorsText(v.errors, { dataVar: "value" });
  };
  return ajvCheck;
}

/** An output file is read as data, at most this much of it. */
const OUTPUT_FILE_CAP = 4 * 1024 * 1024;

function readOutputFile(workdir: string, rel: string): string | undefined {
  const r = readOutputInside(workdir, rel, { maxBytes: OUTPUT_FILE_CAP });
  return r.ok ? r.text : undefined;
}
