/**
 * Starting phaseloop itself as a process of its own: in a new session and
 * process group (so it outlives the caller and a Ctrl-C meant for the caller
 * does not reach it), with no terminal, its output in a file. What it runs
 * is an ordinary `phaseloop run` or `phaseloop resume`: one code path for
 * every run, whoever starts it.
 */
import type { Host, HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";
import { nodeHost } from "../host/node-host.ts";
import { makePhaseloopDirOn } from "../runtime/run-store.ts";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The program and the arguments that start this phaseloop's CLI. */
export function phaseloopCommand(files: HostFiles = nodeFiles): string[] {
  const deno = (globalThis as { Deno?: DenoLike }).Deno;
  if (deno) {
    // Deno runs this phaseloop again (the script it started from, or the sources), with no more permission than this process has
    const main = deno.mainModule.startsWith("file:") ? fileURLToPath(deno.mainModule) : "";
    const script = /[\\/]cli\.(ts|cjs)$/.test(main) ? main : [new URL("../cli.ts", import.meta.url), new URL("../../src/cli.ts", import.meta.url)].map((u) => fileURLToPath(u)).find((p) => files.exists(p));
    if (!script) throw new Error("cannot find phaseloop's CLI (src/cli.ts)");
    return [deno.execPath(), "run", ...denoPermissions(deno), script];
  }
  // the bundle (dist/chunks/ → dist/cli.cjs), the library build (dist/control/ → dist/cli.cjs), the sources (src/control/ → dist/cli.cjs)
  for (const candidate of ["../cli.cjs", "../../dist/cli.cjs"]) {
    const path = fileURLToPath(new URL(candidate, import.meta.url));
    if (files.exists(path)) return [process.execPath, path];
  }
  throw new Error("cannot find phaseloop's CLI (dist/cli.cjs): build it with npm run build");
}

interface DenoLike {
  execPath(): string;
  mainModule: string;
  permissions: { querySync(descriptor: { name: string }): { state: string } };
}

/** The `--allow-*` flags of the permissions this process holds whole (one granted in part is left out: the run then says what it lacks). */
function denoPermissions(deno: DenoLike): string[] {
  const names = ["read", "write", "env", "run", "sys", "net", "ffi"];
  const granted = names.filter((name) => deno.permissions.querySync({ name }).state === "granted");
  return granted.length === names.length ? ["-A"] : granted.filter((name) => name !== "ffi").map((name) => `--allow-${name}`);
}

/** Where a detached run's own output goes (the reporter's lines, and what it says if it cannot start). */
export function outputLogPath(workdir: string, runId: string): string {
  return join(workdir, ".phaseloop", "output", `${runId}.log`);
}

export interface Launched {
  pid: number;
  /** Resolves with the exit code when the process ends (while the caller lives). */
  exited: Promise<number | null>;
  /** Whether it has ended, and how. */
  readonly exitCode: number | null | undefined;
  /** What it has printed so far. */
  output(): string;
}

export interface LaunchOptions {
  /** The CLI's arguments (`run …`, `resume …`). */
  args: string[];
  workdir: string;
  runId: string;
  env: Record<string, string | undefined>;
  /** The program that starts phaseloop (default: this one). */
  command?: string[];
  /** Files and processes: the machine phaseloop runs on, unless given. */
  host?: Host;
}

export function launchDetached(o: LaunchOptions): Launched {
  const host = o.host ?? nodeHost;
  const command = o.command ?? phaseloopCommand(host.files);
  const logPath = outputLogPath(o.workdir, o.runId);
  makePhaseloopDirOn(host.files, o.workdir, "output"); // with its .gitignore, as a run makes it
  let exitCode: number | null | undefined;
  const child = host.processes.detach({ command: [...command, ...o.args], cwd: o.workdir, env: { ...o.env, NO_COLOR: "1" }, logFile: logPath });
  const exited = child.exited.then((code) => (exitCode = code));
  return {
    pid: child.pid ?? -1,
    exited,
    get exitCode() {
      return exitCode;
    },
    output: () => {
      try {
        return host.files.readText(logPath);
      } catch {
        return "";
      }
    },
  };
}
