/**
 * The one way phaseloop runs git itself (change measurement, lanes, merges):
 * its own git binary (src/host/own-programs.ts), with every setting that
 * would run something the repository defines turned off. An agent may write
 * `.gitattributes`, nested repositories and their `.git/config`; none of
 * those may make phaseloop's git run a program: no hooks, no fsmonitor, no
 * recursion into submodules (whose own config could name a filter), no
 * pager, editor or credential helper; its diffs are asked with
 * `--no-ext-diff --no-textconv`.
 * The user's own configuration (global and system) is kept: it is not an
 * agent's to write.
 */
import { spawn, spawnSync, type ChildProcessByStdio, type SpawnOptions, type SpawnSyncOptions, type SpawnSyncReturns } from "node:child_process";
import type { Readable } from "node:stream";
import process from "node:process";
import { ownPath, ownProgram } from "./own-programs.ts";

export const GIT_HARDENING = [
  "-c", "core.hooksPath=/dev/null",
  "-c", "core.fsmonitor=false",
  "-c", "diff.ignoreSubmodules=all",
  "-c", "submodule.recurse=false",
  "-c", "status.submoduleSummary=false",
  "-c", "fetch.recurseSubmodules=false",
  "-c", "core.pager=cat",
  "-c", "core.editor=true",
  "-c", "sequence.editor=true",
  "-c", "core.sshCommand=false",
  "-c", "core.askPass=",
  "-c", "credential.helper=",
  "-c", "core.alternateRefsCommand=",
  "-c", "protocol.allow=never",
  "-c", "commit.gpgSign=false",
  "-c", "tag.gpgSign=false",
  "-c", "log.showSignature=false",
  "-c", "gc.auto=0",
  "-c", "maintenance.auto=false",
  "-c", "interactive.diffFilter=",
];

/** Variables of the parent's environment git obeys that would send it elsewhere or make it run something. */
const DROPPED = /^GIT_(?!AUTHOR_|COMMITTER_)/;

/** The environment of phaseloop's git: the parent's without its GIT_* settings, the trusted PATH, then `extra`. */
export function ownGitEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(process.env)) if (!DROPPED.test(k)) env[k] = v;
  env.PATH = ownPath();
  env.GIT_TERMINAL_PROMPT = "0";
  env.GIT_EXTERNAL_DIFF = undefined;
  env.GIT_PAGER = "cat";
  Object.assign(env, extra);
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  return env;
}

/** git, waited for; its output as text. */
export function ownGitSync(args: string[], options: Omit<SpawnSyncOptions, "env" | "encoding"> & { env?: Record<string, string | undefined> } = {}): SpawnSyncReturns<string> {
  return spawnSync(ownProgram("git"), [...GIT_HARDENING, ...args], { ...options, encoding: "utf8", env: ownGitEnv(options.env) as NodeJS.ProcessEnv });
}

/** git, started, its output piped. */
export function ownGitSpawn(args: string[], options: Omit<SpawnOptions, "env" | "stdio"> & { env?: Record<string, string | undefined> } = {}): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(ownProgram("git"), [...GIT_HARDENING, ...args], { ...options, stdio: ["ignore", "pipe", "pipe"], env: ownGitEnv(options.env) as NodeJS.ProcessEnv });
}

/** A git command line for `sh -c` (several commands in one process), hardened the same way. */
export function ownGitWords(args: string[]): string[] {
  return [ownProgram("git"), ...GIT_HARDENING, ...args];
}
