/**
 * A phase's OS sandbox: the profile compiled from its tool set and agent, a private temp
 * dir, and each of its processes wrapped in that profile. What the sandbox refused is read
 * back after each process, so the phase can fail as a policy_violation naming it.
 */
import { homedir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import type { CompiledHook, CompiledPhase, Machine } from "../machine/types.ts";
import type { SandboxMode } from "../pipeline/spec.ts";
import { fenceCacheHome, releaseTemp, removeFenceTemps, runTempDir, takeTemp } from "../host/fence-temps.ts";
import type { HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { probeSandbox } from "../host/probe-sandbox.ts";
import { agentState, compileSandbox, coveringDir, isUnder, joinInside, stateConfig, stateDirAllowed, type SandboxInput, type SandboxProfile } from "../sandbox/compile-sandbox.ts";
import { PRESETS, presetNamed, sandboxNeeds } from "../agents/presets/registry.ts";
import process from "node:process";
import { mcpHosts, phaseMcpServers } from "../mcp/mcp-server.ts";
import { hookSandbox, phaseSandbox } from "../machine/sandbox-plan.ts";
import type { ProcessEnv, RunContext } from "./run-context.ts";
import { ensureArtifacts } from "./run-artifacts.ts";
import { fenceShims, livableEnv, makeWriteDirs, removeEmptyMade } from "./fence-livable.ts";
import { withheld } from "./fence-env.ts";
import { forgetStateCopies, stateCopy, type StateCopy } from "./agent-state.ts";
import { forgetFenceLookups, ownFenceAvailable, tmpPathsIn } from "../host/linux-fence.ts";
import { buildStage, carryStage, type Stage } from "../host/stage-copy.ts";
import { mustStage } from "../sandbox/member-stage.ts";
import { isProtectedPath } from "../sandbox/bwrap-args.ts";

/** A command made ready to run in the fence. */
export interface FencedCommand {
  argv: string[];
  /** Variables to lay over the process's environment (undefined: the inherited one is withheld). */
  env: Record<string, string | undefined>;
  /** After the process ended: what the sandbox refused it (from its errors, and its tools' results in `stdout`), and the wrapping released. */
  done(stderr: string, stdout?: string): string[];
  /**
   * Every process it starts is in a PID namespace of its own (phaseloop's Linux fence), which
   * ends them all when it ends: none is left to look for afterwards.
   */
  contained: boolean;
}

export interface PhaseFence {
  profile: SandboxProfile;
  wrap(command: string | string[], env: ProcessEnv): Promise<FencedCommand>;
  /** Everything refused so far in this phase. */
  readonly refused: string[];
  /**
   * A parallel member's: whether a path (relative to the workdir) is where it wrote the
   * workdir itself (not through a staging copy). A change anywhere else was another member's.
   */
  mine?(path: string): boolean;
  close(): void;
}

let sessionOpened = false;
/** Sandboxed commands running now, in every phase of this run. */
let running = 0;

/** Whether any sandboxed command of this run is running now (its placeholders may be in the workdir). */
export function sandboxesRunning(): boolean {
  return running > 0;
}
/** Phases already said to run unsandboxed for want of the proxy. */
const warnedNoProxy = new Set<string>();

/** Stop the sandbox's proxies, if a phase of this run started them, and remove the phases' temp dirs. */
export async function closeFences(): Promise<void> {
  forgetStateCopies();
  forgetFenceLookups();
  removeFenceTemps();
  if (!sessionOpened) return;
  sessionOpened = false;
  await (await import("../host/sandbox-session.ts")).closeSandboxSession();
}

/**
 * A refusal of a host the agent's CLI contacts on its own (usage statistics, error reports,
 * update checks, its preset's `housekeeping`): the sandbox refuses it like any other, but that
 * is the CLI's housekeeping, not the agent leaving its tool set, so it does not fail the phase.
 */
function quiet(refusal: string, agent: SandboxInput["agent"]): boolean {
  return sandboxNeeds(agent).housekeeping.some((host) => new RegExp(`(?:^connect |\\s)(?:[a-z0-9-]+\\.)*${host.replaceAll(".", "\\.")}(?::\\d+)?\\b`, "i").test(refusal));
}

/** Variables through which agent CLIs are told to keep their state elsewhere. */
const STATE_VARS = PRESETS.flatMap((p) => p.sandbox.stateVars ?? []);
export const STATE_VAR_NAMES: readonly string[] = STATE_VARS;

/**
 * The agent's state must exist before the sandbox starts: only what exists can be made
 * writable. Directories are created as the CLI would on its first run; a config file as an
 * empty JSON object.
 */
function prepareState(files: HostFiles, profile: SandboxProfile, stateDirs: readonly string[]): void {
  for (const path of stateDirs) {
    if (!profile.allowWrite.includes(path) || files.exists(path)) continue;
    try {
      if (path.endsWith(".json")) {
        if (files.exists(dirname(path))) files.writeText(path, "{}\n", { exclusive: true, mode: 0o600 });
      } else files.mkdir(path, { mode: 0o700 });
    } catch {
      // left as it is: the agent meets a read-only file system there, and says so
    }
  }
}

/**
 * Which agent program a phase runs: its preset, or for a command agent the program its command
 * starts (`claude -p …` needs what claude needs: its API host, its state), seen past `env`,
 * variable assignments and `npx`.
 */
export function agentKind(phase: CompiledPhase, machine: Machine, command?: string | readonly string[]): SandboxInput["agent"] {
  if (phase.kind === "run" || phase.agent === undefined) return "command";
  const preset = machine.agents[phase.agent]?.preset;
  if (presetNamed(preset) !== undefined) return preset!;
  let words = typeof command === "string" ? command.trim().split(/\s+/) : [...(command ?? [])];
  // `sh -c "claude -p"`: the program is the script's
  if (words.length >= 3 && /^(?:.*\/)?(?:sh|bash|dash|zsh)$/.test(words[0]!) && words[1] === "-c") words = words[2]!.trim().split(/\s+/);
  const program = words.find((w) => !/^(?:env|npx|exec|command|[A-Za-z_][A-Za-z0-9_]*=.*|-.*)$/.test(w));
  const name = program?.split("/").pop();
  return PRESETS.find((p) => p.program !== undefined && p.program === name)?.name ?? "command";
}

/**
 * What an agent CLI's own config says of where its API is (codex's model providers: their
 * base URLs, the variables holding their keys), as it said when this run first read it: a
 * phase's agent may write its state, and what it writes there must not widen a later phase (a
 * provider's `base_url` is a host the phase may reach). The config itself is read-only in the fence.
 */
const ownConfigSeen = new Map<string, { baseUrls: string[]; envKeys: string[] }>();

function ownConfig(agent: string, env: ProcessEnv): { baseUrls: string[]; envKeys: string[] } {
  const own = sandboxNeeds(agent).ownConfig;
  if (!own) return { baseUrls: [], envKeys: [] };
  const file = own.file(env, homedir());
  const seen = ownConfigSeen.get(file);
  if (seen !== undefined) return seen;
  let text = "";
  try {
    // read once per run and process, before any phase ran: the machine's own file
    text = nodeFiles.readText(file);
  } catch {
    // none
  }
  const found = own.read(text);
  ownConfigSeen.set(file, found);
  return found;
}

/**
 * The inherited variables a fenced process of this phase is not given (set to undefined over
 * its environment): all but what it needs (fence-env.ts). A fenced `run` phase or hook runs
 * what the agent wrote (`npm test` runs its tests), so it is held like an agent, without the
 * agents' API variables: a secret reaches it only when the pipeline names it in `env`. A
 * phase or hook that says `sandbox: off` is not fenced and keeps the environment phaseloop was
 * started in. --dry-run names the same.
 */
export function withheldFor(phase: CompiledPhase, machine: Machine, env: ProcessEnv, command?: string | readonly string[]): Record<string, undefined> {
  if (phase.kind !== "agent") return withheld(env, { agent: false });
  // the variables the agent's own config reads its keys from (codex's `env_key`): an agent's, so they pass into its fence
  return withheld(env, { agent: true, names: ownConfig(agentKind(phase, machine, command), env).envKeys });
}

let homesSeen: string[] | undefined;

/** The user's own home directories: from the password database and the HOME phaseloop was started with. */
function realHomes(): string[] {
  if (homesSeen !== undefined) return homesSeen;
  const found: string[] = [];
  try {
    found.push(userInfo().homedir);
  } catch {
    // no entry in the password database
  }
  if (process.env.HOME) found.push(process.env.HOME);
  homesSeen = [...new Set(found.filter((h) => h.startsWith("/") && h !== "/"))];
  return homesSeen;
}

/** Which folders a state variable may seed an agent's copy from: those it could make writable (stateDirAllowed). */
export function stateSourceAllowed(workdir: string, env: ProcessEnv): (dir: string) => boolean {
  const homes = [env.HOME || homedir(), ...realHomes()];
  return (dir) => stateDirAllowed(dir, workdir, homes);
}

/** The sandbox profile of a phase: its tool set and agent, where it works, its temp dir. */
export function phaseProfile(machine: Machine, phase: CompiledPhase, write: readonly string[] | undefined, env: ProcessEnv, workdir: string, tempDir: string, command?: string | readonly string[], artifacts?: string): SandboxProfile {
  const agent = agentKind(phase, machine, command);
  const agentSpec = phase.agent ? machine.agents[phase.agent] : undefined;
  const toolSet = phase.tools ? machine.tools[phase.tools] : undefined;
  const baseUrls = [agentSpec?.base_url, ...sandboxNeeds(agent).baseUrlVars.map((name) => env[name]), ...ownConfig(agent, env).baseUrls].filter((u): u is string => typeof u === "string" && u !== "");
  const home = env.HOME || homedir();
  // the secrets of the user's real home are hidden whatever HOME the pipeline sets
  const secretHomes = realHomes();
  const stateDirs = STATE_VARS.map((name) => env[name]).filter((d): d is string => typeof d === "string" && stateDirAllowed(d, workdir, [home, ...secretHomes]));
  // the phase's HTTP MCP servers are hosts it reaches
  const mcp = mcpHosts(phaseMcpServers(phase.mcp, machine.mcp, workdir, (t) => t));
  // a run phase (or a hook) names its hosts itself
  const named = phase.kind === "run" ? phase.network : toolSet?.network;
  const network = mcp.length ? [...(named ?? []), ...mcp] : named;
  return compileSandbox({ workdir, home, secretHomes, tempDir, write: toolSet ? (write ?? []) : undefined, agent, baseUrls, network, stateDirs, ...(artifacts !== undefined ? { artifacts } : {}) });
}

/** The hosts a phase may reach, as the pipeline and the environment say before it runs (its agent's API, tools.network, HTTP MCP servers). */
export function phaseHosts(machine: Machine, phase: CompiledPhase, env: ProcessEnv, workdir: string): string[] {
  const command = phase.agent !== undefined ? machine.agents[phase.agent]?.command : undefined;
  return phaseProfile(machine, phase, undefined, env, workdir, workdir, command).allowedHosts;
}

/**
 * The fence of a phase, or undefined when it runs without one (sandbox off, or auto on a
 * machine that has none; `required` without one never gets here: preflight refused the run).
 * `write` is the phase's rendered write globs; undefined when the phase has no tool set.
 */
export async function openFence(phase: CompiledPhase, write: readonly string[] | undefined, env: ProcessEnv, ctx: RunContext, flag: SandboxMode | undefined, command?: string | readonly string[], group?: MemberGlobs): Promise<PhaseFence | undefined> {
  return fenceFor(phase, phaseSandbox(ctx.machine, phase, flag), write, env, ctx, command, group);
}

/** The fence of a hook: like a `run` phase's (the workdir writable, no host unless it names one). */
export async function openHookFence(hook: CompiledHook, env: ProcessEnv, ctx: RunContext, flag: SandboxMode | undefined, command: string | readonly string[]): Promise<PhaseFence | undefined> {
  const phase = { name: `hook-${hook.name}`, kind: "run", sandbox: hook.sandbox, network: hook.network, output: {} } as unknown as CompiledPhase;
  return fenceFor(phase, hookSandbox(ctx.machine, hook, flag), undefined, env, ctx, command);
}

/** The run's cache home: where fenced tools keep what they would keep under HOME (npm, pip, cargo, bytecode). */
/**
 * The profile with the run's copy of the agent's state in place of the user's: the copy
 * writable, its configuration read-only as the user's was (what a phase writes there must not
 * widen a later phase of the run), the user's state no longer writable at all.
 */
export function withStateCopy(compiled: SandboxProfile, kind: SandboxInput["agent"], userState: readonly string[], copy: StateCopy, cache: string): SandboxProfile {
  // the CLI's caches (`~/.cache/claude`) stay as they were: not its configuration
  const allowWrite = [...compiled.allowWrite.filter((d) => !userState.includes(d) || d.includes("/.cache/")), ...copy.dirs, cache];
  const protect = [...(compiled.protect ?? []), ...stateConfig({ agent: kind, home: "/nonexistent", stateDirs: [copy.stateDir] }).filter((p) => isUnder(p, copy.stateDir))];
  return { ...compiled, allowWrite, protect };
}

async function ownMatcher(globs: readonly string[]): Promise<(rel: string) => boolean> {
  const { default: picomatch } = await import("picomatch");
  const some = globs.filter((g) => g !== "");
  const match = picomatch(some.length ? [...some] : ["\0"], { dot: true });
  // a protected name is outside every write scope, as in the fence, and so are the workdir's
  // `.git` and `.phaseloop`, made or not (a `.git` carried into a workdir that is not a repository
  // would be a repository whose config the agent wrote)
  return (rel) => match(rel) && !isProtectedPath(rel) && !/^\.(?:git|phaseloop)(?:\/|$)/.test(rel);
}

/** A parallel member's own write globs and the other members' (rendered). */
export interface MemberGlobs {
  own: readonly string[];
  others: readonly string[];
}

async function fenceFor(phase: CompiledPhase, plan: { mode: SandboxMode }, write: readonly string[] | undefined, env: ProcessEnv, ctx: RunContext, command?: string | readonly string[], group?: MemberGlobs): Promise<PhaseFence | undefined> {
  if (plan.mode === "off") return undefined;
  const offer = probeSandbox();
  if (!offer.available) {
    if (plan.mode === "required") throw new Error(`phase "${phase.name}" requires an OS sandbox: ${offer.reason}`);
    return undefined;
  }
  // a temp dir of the phase's own, in a directory of this run's own (mode 0700): nobody else
  // can put anything there
  const runTemp = runTempDir();
  // phases of the same name run at once in parallel lanes: each has a dir of its own
  const tempDir = takeTemp();
  const mountPoints = new Set<string>();
  const compiled = phaseProfile(ctx.machine, phase, write, env, ctx.info.workdir, tempDir, command, ensureArtifacts(ctx.info.workdir, ctx.info.run_id, ctx.host.files));
  if (offer.noProxy && compiled.allowedHosts.length > 0) {
    // hosts preflight could not foresee (the agent is only known from the command it runs)
    releaseTemp(tempDir, mountPoints);
    const why = `phase "${phase.name}" may reach ${compiled.allowedHosts.join(", ")}, and the proxy to them cannot run here: ${offer.noProxy.reason}`;
    if (plan.mode === "required") throw new Error(`${why}; ${offer.noProxy.fix}`);
    // a phase preflight saw coming was named when the run started
    if (!warnedNoProxy.has(phase.name) && ctx.info.sandbox?.phases[phase.name] !== "unavailable") ctx.emit({ type: "note", level: "warning", message: `${why}: it runs without an OS sandbox (sandbox: auto). ${offer.noProxy.fix}` });
    warnedNoProxy.add(phase.name);
    return undefined;
  }
  const cache = fenceCacheHome();
  const kind = agentKind(phase, ctx.machine, command);
  const userState = agentState({ agent: kind, home: env.HOME || homedir(), stateDirs: STATE_VARS.map((n) => env[n] ?? "").filter((d) => compiled.allowWrite.includes(d)) });
  // an agent CLI works on the run's copy of its state: the user's own is read, never written (agent-state.ts)
  let copy: StateCopy | undefined;
  try {
    copy = phase.kind === "agent" ? stateCopy(kind, env, ctx.info.run_id, stateSourceAllowed(ctx.info.workdir, env)) : undefined;
  } catch (error) {
    releaseTemp(tempDir, mountPoints);
    throw new Error(`phase "${phase.name}": cannot make the run's copy of the agent's state: ${(error as Error).message}`);
  }
  const profile: SandboxProfile =
    copy === undefined
      ? { ...compiled, allowWrite: [...compiled.allowWrite, cache] }
      : withStateCopy(compiled, kind, userState, copy, cache);
  if (copy === undefined) prepareState(ctx.host.files, profile, userState);
  // the folders the write globs name, made now: only what exists can be bound writable
  const made = makeWriteDirs(ctx.host.files, profile, ctx.info.workdir);
  if (group !== undefined && group.others.length > 0) {
    // a member's own folders too, each glob's: one only it may write is then bound as itself, not copied
    const own = group.own.map((glob) => coveringDir(glob)).filter((d): d is string => d !== undefined && d !== "").map((d) => joinInside(ctx.info.workdir, d)!);
    made.push(...makeWriteDirs(ctx.host.files, { ...profile, allowWrite: own.filter((d) => profile.allowWrite.some((w) => isUnder(d, w))) }, ctx.info.workdir));
  }
  // the library loads only when a phase is sandboxed: runs without one start as fast as before
  const { releaseSandboxed, sandboxRefusals, wrapInSandbox } = await import("../host/sandbox-session.ts");
  sessionOpened = true;
  const refused: string[] = [];
  const agent = agentKind(phase, ctx.machine, command);
  const workdir = ctx.info.workdir;
  // a member stages the folders another member may write too (member-stage.ts); where the
  // fence is the library's, it cannot, and the members are judged afterwards as before
  const staging = group !== undefined && group.others.length > 0 && ownFenceAvailable();
  const allowed = staging ? await ownMatcher(group.own) : undefined;
  const direct = new Set<string>();
  let closed = false;
  return {
    profile,
    refused,
    ...(staging
      ? {
          mine: (path: string) => {
            const abs = join(workdir, path);
            return [...direct].some((dir) => isUnder(abs, dir));
          },
        }
      : {}),
    async wrap(command, env) {
      const inside: Record<string, string> = { ...livableEnv(profile, ctx.info.workdir, cache, env), ...copy?.env, TMPDIR: tempDir };
      // codex started any way at all (a command agent's `sh -c "codex exec -s workspace-write"`)
      // meets phaseloop's fence as its sandbox, not its own, which cannot start inside it
      const shims = await fenceShims(ctx.host.files, runTemp, env.PATH ?? "", ctx.info.workdir);
      if (shims !== undefined) inside.PATH = `${shims}:${env.PATH ?? ""}`;
      // what the process may look for in the host's /tmp (a file NODE_OPTIONS requires, the pipeline's own folder): seen there, read-only
      const seen = [dirname(ctx.machine.file)];
      for (const name in env) if (typeof env[name] === "string" && env[name]!.includes("/tmp/")) seen.push(...tmpPathsIn(env[name]!));
      const stages: Stage[] = [];
      if (staging) {
        for (const dir of profile.allowWrite) {
          if (!isUnder(dir, workdir) || !ctx.host.files.exists(dir)) continue;
          const rel = dir === workdir ? "" : dir.slice(workdir.length + 1);
          if (!mustStage(rel, group!.others)) {
            direct.add(dir);
            continue;
          }
          const stage = buildStage(workdir, rel, group!.own, group!.others, runTemp);
          stages.push(stage);
          for (const d of stage.direct) direct.add(d);
        }
      }
      const wrapped = await wrapInSandbox(stages.length > 0 ? { ...profile, staged: stages } : profile, command, workdir, inside, inside.PATH ?? env.PATH, seen);
      for (const name of wrapped.tmpMounts ?? []) mountPoints.add(name);
      running++;
      let ended = false;
      return {
        argv: wrapped.argv,
        // the parent's environment only as far as the process needs it (fence-env.ts)
        env: { ...withheldFor(phase, ctx.machine, env, command), ...wrapped.env, TMPDIR: tempDir },
        contained: wrapped.absent !== undefined,
        done(stderr, stdout) {
          if (!ended) running--;
          ended = true;
          const found = sandboxRefusals(profile, wrapped, stderr, ctx.info.workdir, stdout).filter((r) => !quiet(r, agent));
          releaseSandboxed(wrapped);
          // what the member changed in its copies: its own globs' part carried over, the rest refused
          for (const stage of stages.splice(0)) found.push(...carryStage(workdir, stage, allowed!));
          for (const r of found) if (!refused.includes(r)) refused.push(r);
          return found;
        },
      };
    },
    close() {
      if (closed) return;
      closed = true;
      releaseTemp(tempDir, mountPoints);
      // a folder another phase running now may be writing into stays
      if (running === 0) removeEmptyMade(ctx.host.files, made);
    },
  };
}
