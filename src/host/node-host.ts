/**
 * The real host: the machine phaseloop runs on, under Node and Deno alike.
 * With node-files.ts and node-clock.ts, the only modules of the shell that
 * import `node:fs` or read the clock; the safe helpers (read-source-file,
 * run-process, own-git, preflight-host) stay the implementation behind it.
 */
import process from "node:process";
import { stopRunProcesses } from "./orphans.ts";
import { ownGitSync } from "./own-git.ts";
import { createPreflightHost, findProgram } from "./preflight-host.ts";
import { isProcessAlive } from "./process-alive.ts";
import { runProcess } from "./run-process.ts";
import type { Host } from "./host.ts";
import { nodeClock } from "./node-clock.ts";
import { nodeFiles } from "./node-files.ts";

/** The machine phaseloop runs on. */
export const nodeHost: Host = {
  files: nodeFiles,
  processes: { run: runProcess, alive: isProcessAlive, stopRun: (runId) => stopRunProcesses(runId) },
  programs: {
    find: findProgram,
    version: (argv, cwd, env) => createPreflightHost(env).readVersion(argv, cwd),
  },
  git: {
    run(args, options) {
      const r = ownGitSync(args, { cwd: options.cwd, input: options.input, env: options.env });
      return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
    },
  },
  clock: nodeClock,
  get env() {
    return process.env;
  },
  cwd: () => process.cwd(),
  pid: process.pid,
};
