/**
 * The after-check every preset shares: the tool calls an agent's events show,
 * held against the phase's tool set. A read of a path outside `read` (and
 * `write`), a write outside `write`, a command no `bash` pattern allows is a
 * violation whether the CLI enforced the tool set or not; a call the CLI
 * refused is reported by the CLI's own denials, not here. Pure, given the
 * glob matcher.
 */
import { isAbsolute, relative, resolve } from "node:path";
import type { ToolSetSpec } from "../pipeline/spec.ts";
import type { ToolCall } from "./agent-adapter.ts";
import { matchesPattern, splitCommand } from "./command-words.ts";

export type GlobMatcher = (globs: string[]) => (path: string) => boolean;

/** One line per call that left the tool set (at most 20). */
export function checkToolCalls(calls: readonly ToolCall[], tools: ToolSetSpec, workdir: string, glob: GlobMatcher): string[] {
  const readGlobs = [...(tools.read ?? []), ...(tools.write ?? [])];
  const canRead = readGlobs.length ? glob(readGlobs) : () => false;
  const canWrite = (tools.write ?? []).length ? glob(tools.write!) : () => false;
  const out: string[] = [];
  for (const call of calls) {
    if (call.refused || out.length >= 20) continue;
    if (call.kind === "bash" && call.command !== undefined) {
      const bad = commandOutside(call.command, tools.bash ?? []);
      if (bad) out.push(`${call.tool} ran \`${short(call.command)}\`, which no bash pattern of the tool set allows${bad === call.command.trim() ? "" : ` (\`${short(bad)}\`)`}`);
      continue;
    }
    if (call.kind !== "read" && call.kind !== "write") continue;
    for (const p of call.paths) {
      const rel = insideRel(workdir, p);
      const ok = rel !== undefined && (call.kind === "write" ? canWrite(rel) : canRead(rel) || (call.search === true && readableBelow(readGlobs, rel)));
      if (!ok) out.push(`${call.tool} ${call.kind === "read" ? "read" : "wrote"} ${rel === undefined ? p : rel || "."}, outside the tool set's ${call.kind === "read" ? "read" : "write"} globs`);
    }
  }
  return out;
}

/** Whether a glob can match something below the directory `rel` ("" = the workdir). */
function readableBelow(globs: readonly string[], rel: string): boolean {
  if (rel === "") return globs.length > 0;
  return globs.some((g) => {
    const norm = g.replace(/^(?:\.\/)+/, "");
    return norm.startsWith(`${rel}/`) || norm.startsWith("**");
  });
}

/** The path relative to the workdir, or undefined outside it ("" for the workdir itself). */
function insideRel(workdir: string, path: string): string | undefined {
  const rel = relative(workdir, resolve(workdir, path));
  if (rel.startsWith("..") || isAbsolute(rel)) return undefined;
  return rel.split("\\").join("/");
}

const short = (s: string) => (s.length > 160 ? `${s.slice(0, 159)}…` : s).replace(/\n/g, "⏎");

/**
 * The first part of a shell command that no pattern allows, or undefined when
 * every simple command of it is allowed. A command list (`&&`, `||`, `;`,
 * `|`) is checked part by part, as claude does; substitutions, redirections
 * (but `2>&1`) and anything else a simple split cannot read are not allowed.
 */
export function commandOutside(command: string, patterns: readonly string[]): string | undefined {
  for (const part of splitList(command)) {
    const simple = part.replace(/\s+2>&1\s*$/, "").trim();
    if (simple === "") continue;
    const words = splitCommand(simple);
    if (!words.ok || !patterns.some((p) => matchesPattern(words.argv, p))) return part.trim();
  }
  return undefined;
}

/** Split at `&&`, `||`, `;`, `|` and newlines outside quotes. */
function splitList(command: string): string[] {
  const parts: string[] = [];
  let cur = "";
  let quote: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"') {
        cur += c + (command[++i] ?? "");
        continue;
      }
      cur += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      cur += c;
      continue;
    }
    if (c === ";" || c === "\n" || ((c === "&" || c === "|") && command[i + 1] === c)) {
      parts.push(cur);
      cur = "";
      if (c !== ";" && c !== "\n") i++;
      continue;
    }
    if (c === "|" && command[i - 1] !== ">" ) {
      parts.push(cur);
      cur = "";
      continue;
    }
    cur += c;
  }
  parts.push(cur);
  return parts;
}
