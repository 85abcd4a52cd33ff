import { getAdapter } from "../agents/get-adapter.ts";
import { openAiBaseUrl } from "../agents/openai-agent.ts";
import { parseTemplate, renderShell, renderTemplate, shellQuote } from "../expr/index.ts";
import { buildContext } from "../machine/build-context.ts";
import { describeMachine } from "../machine/format-graph.ts";
import { initialSnapshot } from "../machine/transition.ts";
import type { Machine } from "../machine/types.ts";
import { runInForeground, takeControlFlags } from "../control/run-in-foreground.ts";
import type { JsonValue } from "../pipeline/spec.ts";
import { resolve, dirname } from "node:path";
import type { CliIo } from "./cli-io.ts";
import { askerFor, finish, interruptSignal, isSandboxMode, parseReporter, reporterFactory } from "./run-common.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { optimizeHotCodeOnly } from "../runtime/hot-code-only.ts";
import { keepHeapSteady } from "../runtime/steady-heap.ts";
import { hasErrors } from "../diagnostics/diagnostic.ts";
import { printDiagnostics } from "./print-diagnostics.ts";
import { sandboxLines } from "../run/sandbox-preflight.ts";

const USAGE = `Usage: phaseloop run PIPELINE [options]

Options:
  --param k=v          set a param (repeatable); typed by the pipeline's params
  --workdir DIR        where the loop works and keeps .phaseloop/ (default: .)
  --max-iterations N   lower or raise stop.max_iterations for this run
  --task ID            work this task of the queue only (its phases, its
                       verification, its write-back) and stop when it is done;
                       its dependencies must be done (see phaseloop tasks)
  --parallel N         work up to N tasks at once, each in its own git worktree,
                       merged when verified (over tasks.parallel; default 1)
  --into BRANCH        with lanes: merge done tasks into BRANCH (default: the
                       workdir's branch, which must be clean)
  --reporter KIND      auto | tty | plain | json (default auto)
  --sandbox MODE       auto | required | off: the OS sandbox of agent phases,
                       over the pipeline's and the phases' own settings
  --dry-run            print the machine and each phase's command, run nothing

Exit: 0 complete, 1 failed, 2 invalid input, 3 stopped without completing,
130 interrupted (resume with phaseloop resume).
`;

export async function main(argv: string[], io: CliIo): Promise<number> {
  const params: Record<string, string> = {};
  let pipeline: string | undefined;
  let workdir = io.cwd;
  let maxIterations: number | undefined;
  let reporterText: string | undefined;
  let dryRun = false;
  let sandbox: SandboxMode | undefined;
  let task: string | undefined;
  let parallel: number | undefined;
  let into: string | undefined;
  // what the control layer passes a run it starts in a process of its own
  const control = takeControlFlags(argv);
  if (!control.ok) return usage(io, control.message);
  const { runId, startedVia } = control;
  argv = control.rest;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") && !arg.startsWith("--param=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case "--help":
      case "-h":
        io.stdout(USAGE);
        return 0;
      case "--param":
      case "-p": {
        const kv = value();
        const eq = kv?.indexOf("=") ?? -1;
        if (!kv || eq <= 0) return usage(io, `--param needs k=v, got ${kv === undefined ? "nothing" : `"${kv}"`}`);
        params[kv.slice(0, eq)] = kv.slice(eq + 1);
        break;
      }
      case "--workdir":
        workdir = value() ?? "";
        if (!workdir) return usage(io, "--workdir needs a directory");
        break;
      case "--max-iterations": {
        const v = value();
        const n = Number(v);
        if (!v || !Number.isInteger(n) || n < 1) return usage(io, `--max-iterations needs a whole number of at least 1, got "${v ?? ""}"`);
        maxIterations = n;
        break;
      }
      case "--parallel": {
        const v = value();
        const n = Number(v);
        if (!v || !Number.isInteger(n) || n < 1) return usage(io, `--parallel needs a whole number of at least 1, got "${v ?? ""}"`);
        parallel = n;
        break;
      }
      case "--into":
        into = value();
        if (!into) return usage(io, "--into needs a branch name");
        break;
      case "--reporter":
        reporterText = value();
        break;
      case "--dry-run":
        dryRun = true;
        break;
      case "--task":
        task = value();
        if (!task) return usage(io, "--task needs a task id (phaseloop tasks PIPELINE lists them)");
        break;
      case "--sandbox": {
        const v = value();
        if (v === undefined || !isSandboxMode(v)) return usage(io, `--sandbox needs auto, required or off, got "${v ?? ""}"`);
        sandbox = v;
        break;
      }
      default:
        if (arg.startsWith("--param=")) {
          const kv = arg.slice("--param=".length);
          const eq = kv.indexOf("=");
          if (eq <= 0) return usage(io, `--param needs k=v, got "${kv}"`);
          params[kv.slice(0, eq)] = kv.slice(eq + 1);
        } else if (arg.startsWith("-")) return usage(io, `unknown option "${arg}"`);
        else if (pipeline === undefined) pipeline = arg;
        else return usage(io, `unexpected argument "${arg}"`);
    }
  }
  if (!pipeline) return usage(io, "no pipeline given");
  const kind = parseReporter(reporterText);
  if (!kind) return usage(io, `unknown reporter "${reporterText}"; use auto, tty, plain or json`);
  const { signal, dispose } = interruptSignal();
  keepHeapSteady();
  optimizeHotCodeOnly();
  try {
    const outcome = await runInForeground({ pipeline, params, runId, startedVia, workdir: resolve(io.cwd, workdir), maxIterations, dryRun, sandbox, parallel, into, task, env: io.env, reporter: reporterFactory(kind, io), signal, ask: askerFor(kind, io) });
    if (outcome.kind === "dry-run") {
      io.stdout(dryRunText(outcome.machine, outcome.params, resolve(io.cwd, workdir), maxIterations, sandbox, io.env));
      // what preflight found, as a run would report it before starting
      await printDiagnostics(io, outcome.diagnostics, { [outcome.loaded.file]: outcome.loaded.text });
      return hasErrors(outcome.diagnostics) ? 2 : 0;
    }
    return await finish(io, outcome, "run");
  } finally {
    dispose();
  }
}

function usage(io: CliIo, message: string): number {
  io.stderr(`phaseloop run: ${message}\n\n${USAGE}`);
  return 2;
}

/** The machine in words, then what each phase would run in iteration 1. */
export function dryRunText(machine: Machine, params: Record<string, JsonValue>, workdir: string, maxIterations?: number, sandbox?: SandboxMode, env: Record<string, string | undefined> = {}): string {
  const file = resolve(machine.file);
  const snap = initialSnapshot(machine, { runId: "dry-run", params, pipeline: { name: machine.name, file, dir: dirname(file) }, workdir });
  if (maxIterations !== undefined) snap.limits.maxIterations = maxIterations;
  snap.iteration = 1;
  const ctx = buildContext(machine, snap) as unknown as Record<string, JsonValue>;
  const lines = [describeMachine(machine), `resolved limits: max_iterations ${snap.limits.maxIterations}${snap.limits.noProgress !== null ? `, no_progress ${snap.limits.noProgress}` : ""}`, `params: ${JSON.stringify(params)}`, "", "commands (as rendered for iteration 1):"];
  for (const p of machine.phases) {
    if (p.kind === "run" && p.run) {
      const cmd = "shell" in p.run ? renderOr(p.run.shell, ctx, true) : JSON.stringify(p.run.argv.map((a) => renderOr(a, ctx)));
      lines.push(`  ${p.name}: ${"shell" in p.run ? `sh -c ${shellQuote(cmd)}` : cmd}`);
    } else if (p.agent) {
      const agent = machine.agents[p.agent]!;
      const render = (t: string) => {
        const parsed = parseTemplate(t);
        if (!parsed.template) return t;
        const r = renderTemplate(parsed.template, { ...ctx, prompt: "<prompt>", prompt_file: "<prompt file>" });
        return r.ok ? r.value : t;
      };
      if (agent.preset === "openai") {
        const set = p.tools ? machine.tools[p.tools] : undefined;
        const tools = [set?.read?.length ? "read_file, list_files" : "", set?.write?.length ? "write_file" : "", set?.bash?.length ? "run_command" : ""].filter(Boolean).join(", ");
        lines.push(`  ${p.name}: built-in agent: POST ${openAiBaseUrl(agent)}/chat/completions, model ${agent.model ?? "<none: set agents.${p.agent}.model>"}, tools: ${tools || "none"}`);
        continue;
      }
      try {
        const inv = getAdapter(agent).buildInvocation({ agent, prompt: "<prompt>", promptFile: ".phaseloop/runs/RUN_ID/phases/NNNN-" + p.name + "/prompt.md", tools: p.tools ? machine.tools[p.tools] : undefined, workdir, render });
        lines.push(`  ${p.name}: ${JSON.stringify(inv.argv)}${inv.stdin !== undefined ? " (prompt on stdin)" : ""}`);
      } catch (error) {
        lines.push(`  ${p.name}: cannot build the agent command: ${(error as Error).message}`);
      }
    }
  }
  lines.push("", ...sandboxLines(machine, workdir, sandbox, env));
  return lines.join("\n") + "\n";
}

function renderOr(t: import("../expr/index.ts").Template, ctx: Record<string, JsonValue>, quote = false): string {
  const r = quote ? renderShell(t, ctx) : renderTemplate(t, ctx);
  return r.ok ? r.value : `<cannot render: ${r.error}>`;
}
