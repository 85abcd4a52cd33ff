/**
 * What phaseloop knows of an agent preset as data: its name and program, what
 * it supports (sessions, MCP servers, a model it must be given), and what its
 * CLI needs from the OS sandbox. Pure and low in the layers, so that the
 * pipeline's checks, the schema, the sandbox compiler and the fence read it;
 * each preset's traits are one file in this folder, listed in `registry.ts`.
 * How the CLI is started and its output read (argv, allowlist and MCP
 * compilers, event parser, result judge) is the preset's other half, in
 * agents/presets/NAME.ts, which spreads these traits into its description.
 */

/** What a CLI needs from the OS sandbox to run at all. */
export interface SandboxNeeds {
  /** The API hosts it talks to when no base URL moves them. */
  hosts: readonly string[];
  /** Variables through which the CLI is pointed at another API host (their values become its hosts). */
  baseUrlVars: readonly string[];
  /** What it writes to run at all, relative to home. */
  state: readonly string[];
  /** Variables through which it is told to keep its state elsewhere (the folder they name becomes writable). */
  stateVars?: readonly string[];
  /**
   * What in its state folder (`~/.NAME`, or where a state variable moves it) is the user's
   * configuration rather than the CLI's working state: read-only in every phase.
   */
  stateConfig: readonly string[];
  /** Its configuration files in home itself (relative to home), read-only too. */
  homeConfig?: readonly string[];
  /**
   * Hosts it contacts on its own (usage statistics, error reports, update checks): refused like
   * any other, but its housekeeping, so a refusal does not fail the phase.
   */
  housekeeping: readonly string[];
  /**
   * Its project settings in a repository (top-level names in the workdir): no phase may change
   * them, whichever agent runs, since a hook or an MCP server written there runs the next time
   * the CLI starts.
   */
  projectConfig?: readonly string[];
  /** Inherited variables it reads (API keys, endpoints, settings): exact names, and prefixes. They pass into every agent's fence. */
  envNames?: readonly string[];
  envPrefixes?: readonly string[];
  /** Inherited variables that pass only when `flag` is set to 1 or true (claude's AWS credentials, on Bedrock). */
  envWhen?: { flag: string; names: RegExp };
  /**
   * Its own config file that moves its API elsewhere (codex's model providers), read once per
   * run: the base URLs found there are hosts the phase may reach, the variables named there
   * pass into its fence.
   */
  ownConfig?: {
    file(env: Readonly<Record<string, string | undefined>>, homedir: string): string;
    read(text: string): { baseUrls: string[]; envKeys: string[] };
  };
  /** Its argv as it runs inside phaseloop's fence, when its own sandbox cannot start there. */
  insideFence?(argv: string[]): string[];
  /**
   * A shell script put before the real program (its path) on PATH inside the fence, for a CLI
   * started any way at all (a command agent's `sh -c "…"`) whose own sandbox cannot start there.
   */
  fenceShim?(real: string): string;
}

export interface PresetTraits {
  /** The preset's name in a pipeline (`preset: claude`). */
  name: string;
  /** The program it starts (looked up on PATH before a run); none for a preset that runs inside phaseloop. */
  program?: string;
  /** It runs inside phaseloop (the built-in OpenAI-compatible agent, openai-agent.ts), not as a program. */
  builtin?: boolean;
  /** argv that prints the CLI's version, recorded in run.json. */
  versionArgv?: string[];
  /** The hint when the program is not installed. */
  installHint?: string;
  /** The `output_format` name of its event stream, which a command agent may name too. */
  outputFormat?: string;
  /** It reports a session id phaseloop can continue (`session: continue`). */
  sessions: boolean;
  /** An agent of this preset must name its model (`model:`, required by the schema). */
  needsModel?: boolean;
  /** It has an MCP client (a phase's `mcp:` servers reach it). */
  mcp: boolean;
  /** It returns the answer to an enforced JSON Schema beside its final message, not as it (see native-schema.ts). */
  answerBesideText?: boolean;
  sandbox: SandboxNeeds;
}

/** Paths joined as node:path's posix `join` does: `.` and `..` resolved lexically, slashes collapsed. */
export function joinPath(...parts: string[]): string {
  const joined = parts.filter((p) => p !== "").join("/");
  if (joined === "") return ".";
  const absolute = joined.startsWith("/");
  const out: string[] = [];
  for (const part of joined.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && out.length > 0 && out[out.length - 1] !== "..") out.pop();
    else if (part !== ".." || !absolute) out.push(part);
  }
  return `${absolute ? "/" : ""}${out.join("/")}` || ".";
}
