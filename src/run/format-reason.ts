/**
 * Why a run stopped and why a phase failed, in words a person reads: the
 * stop reason's message without its code (the code is in the JSON and the
 * log), the pipeline setting a limit came from left out, and an exit code
 * said once.
 */
import type { RunEvent, StopReason } from "./run-events.ts";

type PhaseFinished = Extract<RunEvent, { type: "phase.finished" }>;

/** Words for a stop reason: `no file changed in 2 iterations in a row`. */
export function formatReason(reason: StopReason): string {
  const message = reason.message.trim();
  if (message === "") return reason.code.replace(/_/g, " ");
  // "… (no_progress: 2)": the setting the limit came from, which the words already say
  return message.replace(/\s*\((?:no_progress|consecutive_failures|max_iterations|max_duration): [^)]*\)/g, "");
}

/** Words for an error class: `exit_nonzero` → `exit code`, `idle_timeout` → `idle timeout`. */
export function formatErrorClass(error: string | null): string {
  switch (error) {
    case null:
      return "failed";
    case "exit_nonzero":
      return "non-zero exit";
    case "output_invalid":
      return "output invalid";
    case "policy_violation":
      return "policy violation";
    case "idle_timeout":
      return "idle timeout";
    case "spawn_error":
      return "could not start";
    case "agent_error":
      return "agent error";
    case "hook_failed":
      return "hook failed";
    default:
      return error.replace(/_/g, " ");
  }
}

/** Why a phase failed, with its exit code said once: `timeout: no output for 5m`, `exit code 1`. */
export function formatFailure(event: Pick<PhaseFinished, "error" | "message" | "exit_code">): string {
  const message = event.message?.trim() ?? "";
  const exit = event.exit_code !== null && event.exit_code !== 0 ? event.exit_code : null;
  const saysExit = exit !== null && new RegExp(`\\bexit(?:ed)?(?: with)?(?: code| status)? ${exit}\\b`).test(message);
  if (event.error === "exit_nonzero") {
    if (message === "" || saysExit) return message === "" ? `exit code ${exit ?? "?"}` : message;
    return exit === null ? message : `${message} (exit code ${exit})`;
  }
  const head = formatErrorClass(event.error);
  const body = message === "" ? head : `${head}: ${message}`;
  return exit === null || saysExit ? body : `${body} (exit code ${exit})`;
}
