/**
 * The real host: the machine phaseloop runs on, under Node and Deno alike.
 * With node-files.ts and node-clock.ts, the only modules of the shell that
 * import `node:fs` or read the clock; the safe helpers (read-source-file,
 * run-process, own-git, preflight-host) stay the implementation behind it.
 */
import process from "node:process";
import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable } from "node:stream";
import { ownGitEnv, ownGitSpawn, ownGitSync, ownGitWords } from "./own-git.ts";
import { ownProgram } from "./own-programs.ts";
import { createPreflightHost, findProgram } from "./preflight-host.ts";
import { isProcessAlive } from "./process-alive.ts";
import { runProcess } from "./run-process.ts";
import type { GitResult, Host } from "./host.ts";
import { nodeClock } from "./node-clock.ts";
import { nodeFiles } from "./node-files.ts";

/** The machine phaseloop runs on. */
export const nodeHost: Host = {
  files: nodeFiles,
  processes: { run: runProcess, alive: isProcessAlive },
  programs: {
    find: findProgram,
    version: (argv, cwd, env) => createPreflightHost(env).readVersion(argv, cwd),
  },
  git: {
    run(args, options) {
      // spawnSync's default buffer stays unless one is asked for (an explicit undefined would lift it)
      const r = ownGitSync(args, { cwd: options.cwd, input: options.input, env: options.env, ...(options.maxBuffer !== undefined ? { maxBuffer: options.maxBuffer } : {}) });
      return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
    },
    start: (args, options) => piped(ownGitSpawn(args, { cwd: options.cwd, env: options.env, detached: true })),
    // one process for several commands: starting one costs the most here
    startAll: (commands, options) => piped(spawn(ownProgram("sh"), ["-c", commands.map((args) => ownGitWords(args).map(quote).join(" ")).join(" && ")], { cwd: options.cwd, env: ownGitEnv(options.env) as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"], detached: true })),
  },
  clock: nodeClock,
  get env() {
    return process.env;
  },
  cwd: () => process.cwd(),
  pid: process.pid,
};

const quote = (a: string): string => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`);

/** A started git's output once it has ended (status null and why when it could not start). */
function piped(child: ChildProcessByStdio<null, Readable, Readable>): Promise<GitResult> {
  return new Promise<GitResult>((resolveGit) => {
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", (e) => resolveGit({ status: null, stdout: "", stderr: e.message }));
    child.on("close", (code) => resolveGit({ status: code, stdout: out, stderr: err }));
  });
}
