/**
 * Preflight: what must hold before a run's first phase, checked before its
 * run folder exists. Each check is a function from the compiled pipeline to
 * the problems it found; the checks run at once, and every problem is
 * reported together, located at the key that causes it (exit 2, nothing run).
 *
 * Checks reach the world only through the host (finding a program, reading a
 * version), so they can be tested with a host in memory. Reading an agent's
 * version is slow for some CLIs (gemini takes about 3 s), so versions are
 * handed back as a promise that the run does not wait for.
 *
 * Prompt files are checked when the pipeline is loaded (PROMPT_NOT_FOUND), so
 * preflight holds what loading cannot know: the machine the run starts on.
 */
import type { Diagnostic, DiagnosticCode } from "../diagnostics/diagnostic.ts";
import type { Host } from "../host/host.ts";
import type { Machine } from "../machine/types.ts";
import { spanOfPointer, parsePipelineText } from "../pipeline/parse-pipeline-text.ts";
import { joinPath } from "../pipeline/paths.ts";
import type { JsonValue } from "../pipeline/spec.ts";
import { openAiBaseUrl } from "../agents/openai/openai-agent.ts";
import { presetNamed } from "../agents/presets/registry.ts";
import type { PreflightHost } from "../host/preflight-host.ts";
import { agentPrograms } from "./agent-programs.ts";

/** What preflight needs from the world: the host of runtime/preflight-host.ts, or one in memory. */
export type { PreflightHost };

/** What preflight needs from the host, for a run with environment `env`. */
export function preflightHostOf(host: Host, env: Record<string, string | undefined>): PreflightHost {
  return {
    env,
    findProgram: (program, cwd) => host.programs.find(program, cwd, env.PATH ?? ""),
    readVersion: (argv, cwd) => host.programs.version(argv, cwd, env),
  };
}

/** What the checks look at. */
export interface PreflightInput {
  machine: Machine;
  /** The pipeline file and its text, to locate problems. */
  file: string;
  text: string;
  params: Record<string, JsonValue>;
  workdir: string;
}

/** One problem a check found, located by a JSON pointer into the pipeline document. */
export interface PreflightProblem {
  code: DiagnosticCode;
  severity?: "error" | "warning";
  message: string;
  /** Where in the pipeline the cause is written: `/agents/worker/preset`. */
  pointer?: string;
  hint?: string;
}

export interface PreflightFindings {
  problems: PreflightProblem[];
  /** Agent versions for run.json, by agent name, when this check reads them. */
  versions?: Promise<Record<string, string>>;
}

/** A check: pure but for what it asks of the host. */
export type PreflightCheck = (input: PreflightInput, host: PreflightHost) => Promise<PreflightFindings>;

export interface PreflightResult {
  diagnostics: Diagnostic[];
  /** Agent versions as they are read; the run records them when they arrive. */
  versions: Promise<Record<string, string>>;
}

/** Every check, in the order their problems are listed. Add a check here. */
export const PREFLIGHT_CHECKS: PreflightCheck[] = [checkAgentPrograms, checkMcpCommands];

/** Runs the checks at once and locates what they found. */
export async function runPreflight(input: PreflightInput, host: PreflightHost, checks: readonly PreflightCheck[] = PREFLIGHT_CHECKS): Promise<PreflightResult> {
  const findings = await Promise.all(checks.map((check) => check(input, host)));
  const problems = findings.flatMap((f) => f.problems);
  const versions = Promise.all(findings.map((f) => f.versions ?? Promise.resolve({}))).then((all) => Object.assign({}, ...all) as Record<string, string>);
  return { diagnostics: locateProblems(problems, input.file, input.text), versions };
}

/** Problems as diagnostics with spans in the pipeline's text. */
export function locateProblems(problems: readonly PreflightProblem[], file: string, text: string): Diagnostic[] {
  if (problems.length === 0) return [];
  const { document } = parsePipelineText(text, file);
  return problems.map((p) => {
    const span = p.pointer === undefined ? { start: 0, end: 0 } : spanOfPointer(document, text, p.pointer);
    return { code: p.code, severity: p.severity ?? "error", message: p.message, file, ...span, ...(p.pointer === undefined ? {} : { pointer: p.pointer }), ...(p.hint === undefined ? {} : { hint: p.hint }) };
  });
}

/**
 * Every agent a phase uses must have its program: the preset's CLI, or the
 * first word of a command (of the script, for `sh -c SCRIPT`). Versions of
 * the programs found are read in the background.
 */
export async function checkAgentPrograms(input: PreflightInput, host: PreflightHost): Promise<PreflightFindings> {
  const used = new Set(input.machine.phases.flatMap((p) => (p.kind === "agent" && p.agent !== undefined ? [p.agent] : [])));
  const programs = agentPrograms(input.machine, input.params).filter((p) => used.has(p.agent));
  const found = await Promise.all(programs.map((p) => host.findProgram(p.program, input.workdir)));
  const problems: PreflightProblem[] = [];
  const versions: Record<string, Promise<string>> = {};
  programs.forEach((p, i) => {
    if (found[i] === null) {
      const spec = input.machine.agents[p.agent]!;
      const what = spec.preset !== undefined && spec.command === undefined ? `the ${spec.preset} preset runs "${p.program}"` : `its command runs "${p.program}"`;
      problems.push({
        code: "AGENT_NOT_FOUND",
        message: `agent "${p.agent}" cannot start: ${what}, which is not installed or not on PATH`,
        pointer: p.pointer,
        hint: p.viaParam !== undefined ? `install "${p.program}", or pass another agent with --param ${p.viaParam}="…"` : (presetNamed(spec.preset)?.installHint ?? `install "${p.program}", or fix the command`),
      });
      return;
    }
    versions[p.agent] = p.versionArgv === undefined ? Promise.resolve(p.label) : host.readVersion(p.versionArgv, input.workdir).then((v) => v ?? "unavailable");
  });
  for (const [name, agent] of Object.entries(input.machine.agents)) {
    if (presetNamed(agent.preset)?.builtin && agent.command === undefined) versions[name] = Promise.resolve(`openai-compatible: ${openAiBaseUrl(agent)}`);
  }
  const names = Object.keys(versions);
  const all = Promise.all(names.map((n) => versions[n]!)).then((values) => Object.fromEntries(names.map((n, i) => [n, values[i]!])));
  return { problems, versions: all };
}

/**
 * Preflight: the program of every stdio MCP server a phase attaches must
 * exist (on PATH, or as a path relative to the server's cwd), or the phase's
 * agent would start without it and fail only when its model reaches for it.
 */
export async function checkMcpCommands(input: PreflightInput, host: PreflightHost): Promise<PreflightFindings> {
  const servers = input.machine.mcp ?? {};
  const attached = new Set(input.machine.phases.flatMap((p) => (p.kind === "agent" ? (p.mcp ?? []) : [])));
  const checks: { name: string; program: string; cwd: string }[] = [];
  for (const name of attached) {
    const server = servers[name];
    if (!server || !("command" in server)) continue;
    const program = server.command[0];
    // a program chosen by a template is known only when the phase renders it
    if (program === undefined || program.includes("{{")) continue;
    const cwd = server.cwd !== undefined && !server.cwd.includes("{{") ? (server.cwd.startsWith("/") ? server.cwd : joinPath(input.workdir, server.cwd)) : input.workdir;
    checks.push({ name, program, cwd });
  }
  const found = await Promise.all(checks.map((c) => host.findProgram(c.program, c.cwd)));
  const problems: PreflightProblem[] = [];
  checks.forEach((c, i) => {
    if (found[i] !== null) return;
    problems.push({
      code: "MCP_COMMAND_NOT_FOUND",
      message: `MCP server "${c.name}" cannot start: its command runs "${c.program}", which is not installed or not on PATH${c.program.includes("/") ? ` (looked in ${c.cwd})` : ""}`,
      pointer: `/mcp/${c.name.replace(/~/g, "~0").replace(/\//g, "~1")}/command/0`,
      hint: `install "${c.program}", or fix the server's command`,
    });
  });
  return { problems };
}
