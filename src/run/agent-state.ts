/**
 * Each run's agents work on a state folder of their own, seeded from the user's: what an
 * agent writes there (a refreshed token, a session, a hook in its settings) never reaches the
 * user's own CLI, and phaseloop reads nothing from it. The user's folder is read, never
 * written. The copy lives in a private folder (0700) of the run's own outside the workdir,
 * `~/.cache/phaseloop/agent-state/RUN` (XDG_CACHE_HOME where set): kept while the run can
 * still be resumed (a CLI session of an earlier phase is found again), removed when the run
 * ends any other way.
 *
 * Where each CLI keeps its state, and the variable that moves it (as the pinned CLIs read them):
 * Claude Code `~/.claude` and `~/.claude.json`, or `$CLAUDE_CONFIG_DIR` holding both; codex
 * `~/.codex` or `$CODEX_HOME`; Gemini CLI `~/.gemini`, or `$GEMINI_CLI_HOME/.gemini` (the
 * variable moves its home).
 */
import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { nodeFiles as files } from "../host/node-files.ts";
import { copyFilePrivately, copyPrivately, privateFolder } from "../host/private-copy.ts";
import type { SandboxInput } from "../sandbox/compile-sandbox.ts";
import type { ProcessEnv } from "./run-context.ts";

/** What a phase's agent gets: its copy, and the variables that point the CLI at it. */
export interface StateCopy {
  /** Variables set inside the fence. */
  env: Record<string, string>;
  /** The copy's folders, writable in the fence. */
  dirs: string[];
  /** The copy's state directory, as the CLI names it (where its settings are). */
  stateDir: string;
}

/** History and caches: not needed to start, often large, and not the run's business. */
const SKIP: Record<string, ReadonlySet<string>> = {
  claude: new Set(["projects", "shell-snapshots", "todos", "statsig", "logs", "file-history", "session-env", "debug", "ide", "local", "downloads"]),
  codex: new Set(["sessions", "archived_sessions", "log", "logs", "tmp", ".tmp", "cache"]),
  gemini: new Set(["tmp", "history", "antigravity"]),
};

/** A file larger than this is not copied (a cache, a log): the CLI makes its own. */
const FILE_CAP = 16 * 1024 * 1024;

const rootsMade = new Set<string>();

/** The run's own folder of agent state, made private (0700) and checked to be a real folder of this user. */
function runRoot(runId: string, home: string): string {
  const base = stateBase(home);
  const dir = join(base, runId.replace(/[^A-Za-z0-9._-]/g, "_"));
  privateFolder(base, dir);
  rootsMade.add(dir);
  return dir;
}

/** Remove the run's agent state (the run ended, not to be resumed). */
export function removeRunState(): void {
  for (const dir of rootsMade) files.remove(dir, { recursive: true, force: true });
  rootsMade.clear();
}

/**
 * The user's own state of a CLI, as the environment phaseloop hands the phase names it. A
 * variable that names a folder no agent's state may be (a home, anything holding one or a
 * home's secrets, the workdir, a top-level folder: stateDirAllowed) seeds nothing: the copy
 * starts empty, and nothing of that folder is copied where the agent can read it.
 */
function sources(agent: SandboxInput["agent"], env: ProcessEnv, home: string, allowed: (dir: string) => boolean): { dir: string; json?: string } | undefined {
  const named = (value: string | undefined, dir: (v: string) => string, fallback: string) => (value ? (value.startsWith("/") && allowed(dir(value)) ? dir(value) : "") : fallback);
  if (agent === "claude") {
    const moved = env.CLAUDE_CONFIG_DIR;
    const dir = named(moved, (v) => v, join(home, ".claude"));
    return moved ? { dir, json: dir === "" ? "" : join(dir, ".claude.json") } : { dir, json: join(home, ".claude.json") };
  }
  if (agent === "codex") return { dir: named(env.CODEX_HOME, (v) => v, join(home, ".codex")) };
  if (agent === "gemini") return { dir: named(env.GEMINI_CLI_HOME, (v) => join(v, ".gemini"), join(home, ".gemini")) };
  return undefined;
}

/** Copies made this run, by CLI and source: every phase of the run works on the same one. */
const made = new Map<string, StateCopy>();

/** Where the run's state folders are (`~/.cache/phaseloop/agent-state`, or under XDG_CACHE_HOME). */
function stateBase(home: string): string {
  return join(process.env.XDG_CACHE_HOME?.startsWith("/") ? process.env.XDG_CACHE_HOME : join(home, ".cache"), "phaseloop", "agent-state");
}

/** The copy an agent of this run works on, as it will be laid out (nothing is made): for --dry-run, and stateCopy. */
export function planStateCopy(agent: SandboxInput["agent"], env: ProcessEnv, runId: string, allowed: (dir: string) => boolean): (StateCopy & { root: string; from: { dir: string; json?: string } }) | undefined {
  const from = sources(agent, env, env.HOME || homedir(), allowed);
  if (from === undefined) return undefined;
  // named by the source, so a resumed run finds the same copy again
  const root = join(stateBase(process.env.HOME || homedir()), runId.replace(/[^A-Za-z0-9._-]/g, "_"), `${agent}-${createHash("sha256").update(from.dir).digest("hex").slice(0, 12)}`);
  if (agent === "gemini") return { env: { GEMINI_CLI_HOME: root }, dirs: [root], stateDir: join(root, ".gemini"), root, from };
  return { env: agent === "claude" ? { CLAUDE_CONFIG_DIR: root } : { CODEX_HOME: root }, dirs: [root], stateDir: root, root, from };
}

/** The run's copy of the agent's state, seeded from the user's on first use; undefined for an agent with none to copy. */
export function stateCopy(agent: SandboxInput["agent"], env: ProcessEnv, runId: string, allowed: (dir: string) => boolean): StateCopy | undefined {
  const plan = planStateCopy(agent, env, runId, allowed);
  if (plan === undefined) return undefined;
  const key = `${agent}\0${plan.from.dir}`;
  const known = made.get(key);
  if (known !== undefined && files.exists(known.stateDir)) return known;
  runRoot(runId, process.env.HOME || homedir());
  if (!files.exists(plan.root)) {
    if (plan.from.dir === "") files.mkdir(plan.stateDir, { mode: 0o700 });
    else copyPrivately(plan.from.dir, plan.stateDir, SKIP[agent]!, FILE_CAP);
    if (plan.from.json && files.stat(plan.from.json)?.isFile()) copyFilePrivately(plan.from.json, join(plan.root, ".claude.json"), FILE_CAP);
  }
  const copy: StateCopy = { env: plan.env, dirs: plan.dirs, stateDir: plan.stateDir };
  made.set(key, copy);
  return copy;
}

/** Forget the copies of this process (its run ended). */
export function forgetStateCopies(): void {
  made.clear();
}
