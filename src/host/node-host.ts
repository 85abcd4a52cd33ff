/**
 * The real host: the machine phaseloop runs on, under Node and Deno alike.
 * It and the modules of host/ it is made of (node-files, node-clock,
 * run-process, orphans, own-git, preflight-host, the Linux fence…) are the
 * only ones that import `node:fs` or `node:child_process` or read the clock.
 */
import { spawn, spawnSync, type ChildProcessByStdio } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import process from "node:process";
import type { Readable } from "node:stream";
import { ownGitEnv, ownGitSpawn, ownGitSync, ownGitWords } from "./own-git.ts";
import { ownProgram } from "./own-programs.ts";
import { stopRunProcesses } from "./orphans.ts";
import { createPreflightHost, findProgram } from "./preflight-host.ts";
import { isProcessAlive } from "./process-alive.ts";
import { runProcess } from "./run-process.ts";
import type { Detached, DetachSpec, GitResult, Host } from "./host.ts";
import { nodeClock } from "./node-clock.ts";
import { nodeFiles } from "./node-files.ts";

/** The machine phaseloop runs on. */
export const nodeHost: Host = {
  files: nodeFiles,
  processes: {
    run: runProcess,
    alive: isProcessAlive,
    stopRun: (runId) => stopRunProcesses(runId),
    detach,
    runSync(argv, options = {}) {
      const r = spawnSync(argv[0]!, argv.slice(1), { cwd: options.cwd, maxBuffer: options.maxBuffer ?? 1024 * 1024, stdio: ["ignore", "pipe", "ignore"] });
      return { status: r.status, stdout: r.stdout ?? new Uint8Array(), error: r.error };
    },
  },
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

/** A program in a session and process group of its own, with no terminal, that outlives phaseloop. */
function detach(spec: DetachSpec): Detached {
  const [program, ...args] = spec.command;
  const fd = spec.logFile === undefined ? undefined : openSync(spec.logFile, "a");
  let child;
  try {
    child = spawn(program!, args, {
      ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
      detached: true,
      stdio: fd === undefined ? "ignore" : ["ignore", fd, fd],
      ...(spec.env === undefined ? {} : { env: Object.fromEntries(Object.entries(spec.env).filter((e): e is [string, string] => e[1] !== undefined)) }),
    });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const exited = new Promise<number | null>((resolveExit) => {
    child.once("error", () => resolveExit(null));
    child.once("exit", (code, signal) => resolveExit(code ?? (signal ? 128 : null)));
  });
  // the caller may end before it does
  child.unref();
  return { pid: child.pid, exited };
}
