/** Deciding why a phase failed. Pure. */
import type { ErrorClass, TransientSpec } from "../pipeline/spec.ts";
import type { ProcessResult } from "../host/run-process.ts";

/**
 * Word-bounded signals of a transient failure. Never plain substrings: "tokens
 * used: 15003" contains "500" and is not an HTTP 500.
 */
export const DEFAULT_TRANSIENT_PATTERNS = [
  String.raw`\b(?:HTTP|status|code|error)[\s:=/]*(?:429|5\d\d)\b`,
  String.raw`\b(?:429|5\d\d) (?:Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out|Overloaded)\b`,
  String.raw`\brate[ _-]?limit(?:ed|s)?\b`,
  String.raw`\btoo many requests\b`,
  String.raw`\boverloaded(?:_error)?\b`,
  String.raw`\b(?:ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH)\b`,
  String.raw`\bsocket hang up\b`,
  String.raw`\btemporarily unavailable\b`,
  String.raw`\bnetwork (?:error|timeout)\b`,
];

const TAIL = 8 * 1024;

export function isTransientText(text: string, patterns: readonly string[] = DEFAULT_TRANSIENT_PATTERNS): boolean {
  const tail = text.slice(-TAIL);
  return patterns.some((p) => {
    try {
      return new RegExp(p, "i").test(tail);
    } catch {
      return false;
    }
  });
}

/**
 * The error class of a finished process, or null when it ended well.
 * `transient` overrides: the defaults plus the agent's and phase's own.
 */
export function classifyProcess(result: ProcessResult, successCodes: readonly number[], transient: TransientSpec[] = []): { error: ErrorClass; message: string } | null {
  if (result.spawnError) return { error: "spawn_error", message: result.spawnError };
  if (result.timedOut) return { error: "timeout", message: `timed out after ${Math.round(result.durationMs / 1000)}s` };
  if (result.idleTimedOut) return { error: "idle_timeout", message: "no output for too long" };
  if (result.exitCode !== null && successCodes.includes(result.exitCode)) return null;
  const patterns = [...DEFAULT_TRANSIENT_PATTERNS, ...transient.flatMap((t) => t.patterns ?? [])];
  const codes = transient.flatMap((t) => t.exit_codes ?? []);
  const why = result.exitCode !== null ? `exit code ${result.exitCode}` : `killed by ${result.signal ?? "a signal"}`;
  if ((result.exitCode !== null && codes.includes(result.exitCode)) || isTransientText(result.stderrTail + "\n" + result.stdoutTail, patterns)) {
    return { error: "transient", message: `${why} (transient: ${transientLine(result.stderrTail + "\n" + result.stdoutTail, patterns)})` };
  }
  return { error: "exit_nonzero", message: why };
}

function transientLine(text: string, patterns: readonly string[]): string {
  const lines = text.slice(-TAIL).split("\n").reverse();
  for (const l of lines) if (patterns.some((p) => new RegExp(p, "i").test(l))) return l.trim().slice(0, 120);
  return "transient error";
}
