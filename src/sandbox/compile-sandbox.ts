/**
 * Compile a phase's tool set and agent into an OS sandbox profile: which directories are
 * writable, which paths are unreadable, which hosts are reachable. Pure: paths in, profile out.
 * The same rules serve every agent (each preset's needs are in its description, agents/presets/;
 * command agents and `run:` phases need nothing of their own); the finer write/read globs are
 * still checked after the phase.
 */

import type { SandboxMode } from "../pipeline/spec.ts";
import { sandboxNeeds } from "../pipeline/presets/registry.ts";

export type { SandboxMode };

export interface SandboxInput {
  /** Absolute, normalised workdir. */
  workdir: string;
  /** Absolute home directory of the user running phaseloop. */
  home: string;
  /** A private temp directory for this phase (absolute). */
  tempDir: string;
  /** The phase's write globs, relative to the workdir; none given (no tool set) is the whole workdir. */
  write?: readonly string[];
  /** A preset name, or "command" for a command agent or a `run:` phase. */
  agent: string;
  /** Where the agent's API is, when the pipeline moves it (base_url, ANTHROPIC_BASE_URL and the like). */
  baseUrls?: readonly string[];
  /** The phase's `tools.network` hosts. */
  network?: readonly string[];
  /** Where the agent keeps its state when moved from home (CLAUDE_CONFIG_DIR, CODEX_HOME), absolute. */
  stateDirs?: readonly string[];
  /** The run's artifacts folder (absolute): writable by every phase. */
  artifacts?: string;
  /** Other home directories whose secrets are hidden too (the user's real one, whatever HOME the pipeline sets). */
  secretHomes?: readonly string[];
}

export interface SandboxProfile {
  /** Directories (absolute) the process may write; everything else is read-only. */
  allowWrite: string[];
  /** Paths (absolute) never writable, even inside allowWrite. */
  denyWrite: string[];
  /** Directories (absolute) inside a denyWrite path that are writable all the same (the run's artifacts folder). */
  carveOut?: string[];
  /** Paths (absolute) the process cannot read. */
  denyRead: string[];
  /** Hosts the process may connect to through the proxy; nothing else is reachable. */
  allowedHosts: string[];
  /** The phase's private temp dir: where the fence can, it is the process's `/tmp`. */
  tmp?: string;
  /**
   * Paths (absolute) inside the agent's writable state that stay read-only: its settings,
   * hooks, rules and commands, which would outlive the run in the user's own CLI and could
   * widen a later phase.
   */
  protect?: string[];
}

/** Files and directories in a home directory that hold credentials. */
export const HOME_SECRETS = [
  ".ssh",
  ".aws",
  ".azure",
  ".config/gh",
  ".config/gcloud",
  ".npmrc",
  ".netrc",
  ".git-credentials",
  ".gnupg",
  ".docker/config.json",
  ".kube",
  ".pypirc",
  ".local/share/keyrings",
  "Library/Keychains",
] as const;

/** The configuration inside an agent's state directories that no phase may change. */
export function stateConfig(input: Pick<SandboxInput, "agent" | "home" | "stateDirs">): string[] {
  const needs = sandboxNeeds(input.agent);
  const dirs = [joinInside(input.home, `.${input.agent}`)!, ...(input.stateDirs ?? []).filter((d) => d.startsWith("/") && d !== "/")];
  const out = needs.stateConfig.length === 0 ? [] : dirs.flatMap((dir) => needs.stateConfig.map((rel) => joinInside(dir, rel)!));
  out.push(...(needs.homeConfig ?? []).map((rel) => joinInside(input.home, rel)!));
  return out;
}

const GLOB_CHARS = /[*?[\]{}()!+@]/;

/** Join a relative path onto an absolute directory, resolving `.` and refusing to climb out. */
export function joinInside(dir: string, rel: string): string | undefined {
  const out: string[] = [];
  for (const part of rel.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length === 0) return undefined;
      out.pop();
      continue;
    }
    out.push(part);
  }
  return out.length === 0 ? dir : `${dir === "/" ? "" : dir}/${out.join("/")}`;
}

/** The directory (relative to the workdir, "" for the workdir) whose subtree covers every match of `glob`; none for a glob with `..`. */
export function coveringDir(glob: string): string | undefined {
  const parts = glob.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) return undefined;
  const fixed: string[] = [];
  for (const part of parts) {
    if (GLOB_CHARS.test(part)) return fixed.join("/");
    fixed.push(part);
  }
  // A literal path: its parent directory, so the file can be created and renamed into place.
  fixed.pop();
  return fixed.join("/");
}

/** Whether `path` is `dir` or below it. */
export function isUnder(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir === "/" ? "/" : `${dir}/`);
}

/** The host of a URL, with its port when it names one; undefined when it is not a URL. */
export function hostOf(url: string): string | undefined {
  const match = /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/]*@)?(\[[^\]]+\]|[^:/?#]+)(:\d+)?/i.exec(url);
  return match?.[1] === undefined ? undefined : `${match[1].toLowerCase()}${match[2] ?? ""}`;
}

function unique(list: readonly string[]): string[] {
  return [...new Set(list)];
}

/** Keep only the outermost of directories nested in each other. */
function outermost(dirs: readonly string[]): string[] {
  const sorted = unique(dirs).sort((a, b) => a.length - b.length);
  const kept: string[] = [];
  for (const dir of sorted) if (!kept.some((k) => isUnder(dir, k))) kept.push(dir);
  return kept;
}

/**
 * Whether a directory a variable names (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME) may be
 * made writable as an agent's state: not a home directory or anything holding one, not the
 * workdir or anything holding it, nothing inside the workdir's `.git` or `.phaseloop`, no
 * folder holding a home's secrets, not a top-level system folder. A variable never makes
 * writable what the tool set does not.
 */
export function stateDirAllowed(dir: string, workdir: string, homes: readonly string[]): boolean {
  if (!dir.startsWith("/") || dir.split("/").filter(Boolean).length < 2 || dir.split("/").includes("..")) return false;
  if (homes.some((home) => isUnder(home, dir)) || isUnder(workdir, dir)) return false;
  if (isUnder(dir, `${workdir}/.git`) || isUnder(dir, `${workdir}/.phaseloop`)) return false;
  return !homes.some((home) => HOME_SECRETS.some((rel) => isUnder(joinInside(home, rel)!, dir)));
}

/** What the agent's program writes to run at all: its state in home, or where the environment moved it. */
export function agentState(input: Pick<SandboxInput, "agent" | "home" | "stateDirs">): string[] {
  return [...sandboxNeeds(input.agent).state.map((rel) => joinInside(input.home, rel)!), ...(input.stateDirs ?? []).filter((d) => d.startsWith("/") && d !== "/")];
}

export function compileSandbox(input: SandboxInput): SandboxProfile {
  const workDirs = (input.write ?? ["**"]).flatMap((glob) => {
    const dir = coveringDir(glob);
    return dir === undefined ? [] : [joinInside(input.workdir, dir)];
  }).filter((d): d is string => d !== undefined);
  const stateDirs = agentState(input);
  const allowWrite = outermost([...workDirs, ...stateDirs, input.tempDir, ...(input.artifacts ? [input.artifacts] : [])]);
  const state = joinInside(input.workdir, ".phaseloop")!;
  const denyWrite = [joinInside(input.workdir, ".git")!, state];
  // the artifacts folder is phaseloop's state, yet every phase writes it
  const carveOut = input.artifacts !== undefined && isUnder(input.artifacts, state) && input.artifacts !== state ? [input.artifacts] : undefined;
  const homes = unique([input.home, ...(input.secretHomes ?? []).filter((h) => h.startsWith("/"))]);
  const denyRead = unique(homes.flatMap((home) => HOME_SECRETS.map((rel) => joinInside(home, rel)!))).filter((p) => !isUnder(input.workdir, p));
  const baseHosts = (input.baseUrls ?? []).map(hostOf).filter((h): h is string => h !== undefined);
  const presetHosts = baseHosts.length > 0 ? baseHosts : sandboxNeeds(input.agent).hosts;
  const allowedHosts = unique([...presetHosts, ...(input.network ?? []).map((h) => h.toLowerCase())]);
  const protect = stateConfig(input);
  return { allowWrite, denyWrite, denyRead, allowedHosts, tmp: input.tempDir, ...(protect.length ? { protect } : {}), ...(carveOut ? { carveOut } : {}) };
}

/** A phase's mode: the phase's setting wins over the pipeline's, the command line over both. */
export function sandboxModeOf(cli: SandboxMode | undefined, phase: SandboxMode | undefined, pipeline: SandboxMode | undefined): SandboxMode {
  return cli ?? phase ?? pipeline ?? "auto";
}
