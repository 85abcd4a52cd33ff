/**
 * GitHub Actions' own language, spoken beside any reporter when
 * GITHUB_ACTIONS=true: a collapsible log group per iteration, `::error`
 * annotations for failed phases and failed runs (`::warning` for a run that
 * stopped without completing, and for warnings), the run's summary.md
 * appended to $GITHUB_STEP_SUMMARY, and the job outputs `outcome`, `run_id`,
 * `exit_code` and `run_dir` in $GITHUB_OUTPUT. A run that waits for an answer
 * also puts its question there (`awaiting_answer`, `question`, `question_phase`).
 *
 * The runner reads workflow commands from stdout and stderr alike; they go
 * where the reporter's own lines go, except for `--reporter json`, whose
 * stdout stays pure NDJSON: there they go to stderr.
 */
import type { Host, HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { nodeHost } from "../host/node-host.ts";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import type { Diagnostic } from "../diagnostics/diagnostic.ts";
import type { SourceMap } from "../diagnostics/format-diagnostic.ts";
import type { Reporter, RunEvent } from "../run/run-events.ts";
import type { TextSink } from "./reporter-io.ts";

export function inGithubActions(env: Record<string, string | undefined>): boolean {
  return env.GITHUB_ACTIONS === "true";
}

/** A workflow command's message: %, CR and LF escaped as the runner unescapes them. */
export function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

/** A workflow command's property value: also `:` and `,`, which end a property. */
export function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/** `::name k=v,k=v::message`, one line. */
export function workflowCommand(name: string, properties: Record<string, string | number | undefined>, message: string): string {
  const props = Object.entries(properties)
    .filter((e): e is [string, string | number] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${escapeProperty(String(v))}`)
    .join(",");
  return `::${name}${props ? ` ${props}` : ""}::${escapeData(message)}\n`;
}

/**
 * One $GITHUB_OUTPUT entry: `name=value`, or a heredoc with a delimiter the
 * value does not contain when it has a line break or `multiline` says it may
 * have one (text from a person or an agent).
 */
export function formatOutput(name: string, value: string, multiline = false): string {
  if (!multiline && !/[\r\n]/.test(value)) return `${name}=${value}\n`;
  let delimiter = "PHASELOOP_EOF";
  while (value.includes(delimiter)) delimiter += "_";
  return `${name}<<${delimiter}\n${value}\n${delimiter}\n`;
}

/** Appends outputs to $GITHUB_OUTPUT and markdown to $GITHUB_STEP_SUMMARY; a file that cannot be written is reported, not thrown. */
export function publishToGithub(env: Record<string, string | undefined>, what: { outputs?: Record<string, string>; summary?: string; multiline?: readonly string[] }, files: HostFiles = nodeFiles): string[] {
  const problems: string[] = [];
  if (what.summary !== undefined && env.GITHUB_STEP_SUMMARY) {
    try {
      files.appendText(env.GITHUB_STEP_SUMMARY, what.summary.endsWith("\n") ? what.summary : `${what.summary}\n`);
    } catch (error) {
      problems.push(`cannot append to GITHUB_STEP_SUMMARY: ${(error as Error).message}`);
    }
  }
  if (what.outputs && env.GITHUB_OUTPUT) {
    try {
      files.appendText(env.GITHUB_OUTPUT, Object.entries(what.outputs).map(([k, v]) => formatOutput(k, v, what.multiline?.includes(k))).join(""));
    } catch (error) {
      problems.push(`cannot append to GITHUB_OUTPUT: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** The answer command a person runs to continue a run that waits. */
export function answerCommand(runId: string): string {
  return `phaseloop resume ${runId} --answer "…"`;
}

/** Wraps a reporter: GitHub Actions commands go to `commands`, in order with the reporter's own lines when it is the same sink. */
export function withGithubActions(reporter: Reporter, commands: TextSink, env: Record<string, string | undefined>, files: HostFiles = nodeFiles, on: Pick<Host, "clock" | "processes"> = nodeHost): Reporter {
  let groupOpen = false;
  let runId = "";
  let workdir: string | null = null;
  let finished: Extract<RunEvent, { type: "run.finished" }> | null = null;
  let interrupted = false;
  let question: Extract<RunEvent, { type: "question.asked" }> | null = null;
  const write = (line: string) => void commands.write(line);
  const endGroup = () => {
    if (groupOpen) write("::endgroup::\n");
    groupOpen = false;
  };
  const openGroup = (title: string) => {
    endGroup();
    write(`::group::${escapeData(title)}\n`);
    groupOpen = true;
  };
  return {
    onEvent(event: RunEvent): void {
      runId = event.run;
      switch (event.type) {
        case "run.started":
          workdir = event.workdir;
          break;
        case "run.resumed":
          workdir = event.workdir ?? workdir;
          break;
        case "iteration.started":
          openGroup(`iteration ${event.iteration}${event.task !== null ? ` · task ${event.task}` : ""}`);
          break;
        case "run.interrupted":
          interrupted = true;
          endGroup();
          break;
        case "run.finished":
          finished = event;
          endGroup();
          break;
        case "question.asked":
          question = event;
          break;
        case "question.answered":
          question = null;
          break;
      }
      reporter.onEvent(event);
      switch (event.type) {
        case "run.resumed":
          // the iteration the run continues in
          if (event.phase !== null) openGroup(`iteration ${event.iteration} (resumed)`);
          break;
        case "phase.finished":
          if (event.status === "failed") {
            const why = [event.error, event.message].filter(Boolean).join(": ");
            write(workflowCommand("error", { title: `phaseloop: phase ${event.phase} failed` }, `iteration ${event.iteration}, phase ${event.phase} failed${why ? ` (${why})` : ""}`));
          }
          break;
        case "note":
          if (event.level === "warning") write(workflowCommand("warning", { title: "phaseloop" }, event.message));
          break;
        case "iteration.finished":
          endGroup();
          break;
        case "run.finished":
          if (event.outcome === "failed") write(workflowCommand("error", { title: "phaseloop: run failed" }, `run ${event.run} failed: ${event.reason.message}`));
          else if (event.outcome !== "complete") write(workflowCommand("warning", { title: `phaseloop: run ${event.outcome}` }, `run ${event.run} ended ${event.outcome}: ${event.reason.message}`));
          break;
      }
    },
    async close(): Promise<void> {
      await reporter.close();
      endGroup();
      if (runId === "") return;
      const runDir = workdir === null ? undefined : join(workdir, ".phaseloop", "runs", runId);
      const awaiting = finished === null && !interrupted && question !== null ? question : null;
      const outcome = finished !== null ? finished.outcome : interrupted ? "interrupted" : awaiting ? "awaiting" : "unfinished";
      const exitCode = finished !== null ? finished.exit_code : interrupted ? 130 : awaiting ? 3 : 1;
      const outputs: Record<string, string> = { outcome, run_id: runId, exit_code: String(exitCode), ...(runDir ? { run_dir: runDir } : {}) };
      let summary = "";
      if (awaiting) {
        Object.assign(outputs, { awaiting_answer: "true", question_phase: awaiting.phase, question: awaiting.question });
        const quoted = awaiting.question.split("\n").map((l) => `> ${l}`).join("\n");
        summary += `### phaseloop is waiting for an answer\n\nPhase \`${awaiting.phase}\` of run \`${runId}\` asks:\n\n${quoted}\n\nAnswer with \`${answerCommand(runId)}\` (or \`--answer-file FILE\`).\n\n`;
      }
      if (runDir) {
        try {
          summary += files.readText(join(runDir, "summary.md"));
        } catch {
          // no summary.md (the run could not write it): the outputs still say how it ended
        }
      }
      if (runDir && workdir !== null) {
        // the run's page as one file beside summary.md, so the action's artifact carries it
        try {
          const { writeRunReport } = await import("../ui/write-report.ts");
          await writeRunReport(workdir, runId, join(runDir, "report.html"), { files, clock: on.clock, processes: on.processes });
        } catch {
          // a convenience: the run's outcome and summary stand without it
        }
      }
      for (const problem of publishToGithub(env, { outputs, summary: summary === "" ? undefined : `${summary.trimEnd()}\n\n`, multiline: ["question"] }, files)) write(workflowCommand("warning", { title: "phaseloop" }, problem));
    },
  };
}

/**
 * `::error file=…,line=…,col=…,endLine=…,endColumn=…,title=CODE::message` per
 * diagnostic (`::warning` for warnings), the file relative to the workspace
 * so the annotation lands on the file in a pull request's diff.
 */
export function formatAnnotations(diagnostics: readonly Diagnostic[], sources: SourceMap, env: Record<string, string | undefined>, cwd: string): string {
  const workspace = env.GITHUB_WORKSPACE;
  return diagnostics
    .map((d) => {
      const counter = sources.counter(d.file);
      const start = counter?.position(d.start);
      const end = counter?.position(Math.max(d.start, d.end));
      let file = d.file;
      if (file !== undefined && workspace) {
        const rel = relative(workspace, resolve(cwd, file));
        if (!rel.startsWith("..") && !isAbsolute(rel)) file = rel.split(sep).join("/");
      }
      const message = `${d.message}${d.hint ? ` (hint: ${d.hint})` : ""}`;
      return workflowCommand(d.severity === "error" ? "error" : "warning", { file, line: start?.line, col: start?.col, endLine: end?.line, endColumn: end?.col, title: d.code }, message);
    })
    .join("");
}

/** A run refused before it started (exit 2): `outcome=invalid` in the job's outputs, and the reason as an annotation (located diagnostics annotate themselves). */
export function refusedInGithub(env: Record<string, string | undefined>, message: string | undefined): string {
  const problems = publishToGithub(env, { outputs: { outcome: "invalid", exit_code: "2" } });
  return [message === undefined ? "" : workflowCommand("error", { title: "phaseloop" }, message.trimEnd()), ...problems.map((p) => workflowCommand("warning", { title: "phaseloop" }, p))].join("");
}
