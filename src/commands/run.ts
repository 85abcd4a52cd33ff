import { shellQuote } from "../expr/index.ts";
import { describeMachine } from "../machine/format-graph.ts";
import type { Machine } from "../machine/types.ts";
import { PLAN_RUN_ID, planRun, type PhasePlan, type RunPlan } from "../run/plan-run.ts";
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
import { SourceMap, sortDiagnostics, toJsonDiagnostic } from "../diagnostics/format-diagnostic.ts";

const USAGE = `Usage: phaseloop run PIPELINE [options]

Validates the pipeline, checks that its agents can start, and runs it in the
workdir, its state, logs and report in .phaseloop/runs/RUN_ID/.

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
  --dry-run            print what the run will do and run nothing: the machine,
                       and each phase as it will start (argv, the variables
                       it gets, by name, its OS sandbox, outputs, timeouts,
                       retries)
  --json               with --dry-run: the same as one JSON document
  -h, --help           this text

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
  let json = false;
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
      case "--json":
        json = true;
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
  if (json && !dryRun) return usage(io, "--json goes with --dry-run (a run's events as JSON: --reporter json)");
  const kind = parseReporter(reporterText);
  if (!kind) return usage(io, `unknown reporter "${reporterText}"; use auto, tty, plain or json`);
  const { signal, dispose } = interruptSignal();
  keepHeapSteady();
  optimizeHotCodeOnly();
  try {
    const outcome = await runInForeground({ pipeline, params, runId, startedVia, workdir: resolve(io.cwd, workdir), maxIterations, dryRun, sandbox, parallel, into, task, env: io.env, reporter: reporterFactory(kind, io), signal, ask: askerFor(kind, io) });
    if (outcome.kind === "dry-run") {
      const file = resolve(outcome.machine.file);
      const plan = planRun({ machine: outcome.machine, params: outcome.params, workdir: resolve(io.cwd, workdir), env: io.env, maxIterations, sandbox, file, dir: dirname(file) });
      if (json) {
        io.stdout(JSON.stringify({ ...plan, diagnostics: sortDiagnostics(outcome.diagnostics).map((d) => toJsonDiagnostic(d, new SourceMap({ [outcome.loaded.file]: outcome.loaded.text }))) }, null, 2) + "\n");
        return hasErrors(outcome.diagnostics) ? 2 : 0;
      }
      io.stdout(dryRunText(outcome.machine, plan));
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

/** The machine in words, then what each phase will run in iteration 1, from the plan the run's own functions built. */
export function dryRunText(machine: Machine, plan: RunPlan): string {
  const lines = [describeMachine(machine), `resolved limits: max_iterations ${plan.limits.max_iterations}${plan.limits.no_progress !== null ? `, no_progress ${plan.limits.no_progress}` : ""}`, `params: ${JSON.stringify(plan.params)}`, "", `each phase as it will start in iteration 1 (the run folder is .phaseloop/runs/${PLAN_RUN_ID}; variables named, not valued):`];
  const sandbox = plan.sandbox;
  for (const p of plan.phases) {
    if (p.kind === "ask") {
      lines.push(`  ${p.phase}: asks ${JSON.stringify(p.question)}${p.timeout_ms ? `, waits at most ${formatMs(p.timeout_ms)}` : ", waits as long as it takes"}`);
      continue;
    }
    if (p.kind === "group") {
      lines.push(`  ${p.phase}: runs ${(p.members ?? []).join(", ")} at once (join: ${p.join})`);
      continue;
    }
    if (p.kind === "pipeline") {
      lines.push(`  ${p.phase}: runs the pipeline ${p.pipeline}${retryText(p)}`);
      continue;
    }
    if (p.error) {
      lines.push(`  ${p.phase}: cannot start: ${p.error}`);
      continue;
    }
    const what = p.builtin ? `built-in agent: POST ${p.builtin.url}, model ${p.builtin.model ?? "<none>"}, tools: ${p.builtin.tools.join(", ") || "none"}` : typeof p.command === "string" ? `sh -c ${shellQuote(p.command)}` : JSON.stringify(p.command);
    lines.push(`  ${p.phase}: ${what}${p.stdin ? " (prompt on stdin)" : ""}`);
    if (p.prompt_file) lines.push(`    prompt file: ${shortPath(p.prompt_file, plan.workdir)}`);
    if (p.env?.length) lines.push(`    env: ${p.env.join(" ")}`);
    if (p.outputs) for (const [name, how] of Object.entries(p.outputs)) lines.push(`    output ${name}: ${how}`);
    lines.push(`    timeout ${formatMs(p.timeout_ms!)}${p.idle_timeout_ms ? `, idle ${formatMs(p.idle_timeout_ms)}` : ""}${retryText(p)}`);
    // in short under the phase; what the fence holds, in the OS sandbox section below
    if (p.sandbox) lines.push(`    OS sandbox: ${p.sandbox.mode}${p.sandbox.mode === "off" || p.sandbox.state === "on" ? "" : p.sandbox.mode === "required" ? " (cannot run here)" : " (runs unsandboxed here)"}`);
  }
  const anyFenced = plan.phases.some((p) => p.sandbox && p.sandbox.mode !== "off");
  lines.push("", `OS sandbox: ${sandbox.available ? `available (${sandbox.platform})${sandbox.no_proxy ? `, but no proxy to allowed hosts: ${sandbox.no_proxy}` : ""}` : `not available here: ${sandbox.reason}`}${anyFenced ? "" : "; no phase of this run uses it"}`);
  for (const p of plan.phases) {
    const s = p.sandbox;
    if (!s) continue;
    if (s.mode === "off") {
      lines.push(`  ${p.phase}: off`);
      continue;
    }
    const state = s.state === "on" ? "" : s.mode === "required" ? " (cannot run here)" : " (runs unsandboxed here)";
    if (s.writes === undefined) {
      lines.push(`  ${p.phase}: ${s.mode}${state} (the phase cannot start: see above)`);
      continue;
    }
    lines.push(`  ${p.phase}: ${s.mode}${state}; writes ${s.writes.join(", ")}; never ${(s.never ?? []).join(", ")}; hosts ${(s.hosts ?? []).join(", ") || "none"}; hides ${s.hidden} secret paths of the home directory${s.env?.length ? `; sets ${s.env.join(" ")}` : ""}${s.withheld?.length ? `; keeps out ${s.withheld.join(" ")}` : ""}`);
  }
  return lines.join("\n") + "\n";
}

function retryText(p: PhasePlan): string {
  return p.retry && p.retry.max_attempts > 1 ? `; up to ${p.retry.max_attempts} attempts on ${p.retry.on.join(", ")}` : "";
}

function formatMs(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

function shortPath(path: string, workdir: string): string {
  return path.startsWith(`${workdir}/`) ? path.slice(workdir.length + 1) : path;
}
