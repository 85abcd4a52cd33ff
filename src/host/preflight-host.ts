/** The preflight host on a real machine: PATH lookups and version commands, all asynchronous. */
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { delimiter, isAbsolute, join, resolve } from "node:path";

/** What preflight needs from the world. */
export interface PreflightHost {
  /** The program's path as a spawn from `cwd` would find it (PATH, or a path relative to `cwd`), or null. */
  findProgram(program: string, cwd: string): Promise<string | null>;
  /** The first line a version command prints, or null when it fails or takes too long; never rejects. */
  readVersion(argv: readonly string[], cwd: string): Promise<string | null>;
  /** Environment of the run (PATH and the like). */
  env: Record<string, string | undefined>;
}

/** How long a version command may take before it is recorded as unavailable. */
const VERSION_TIMEOUT_MS = 15_000;

export function createPreflightHost(env: Record<string, string | undefined>): PreflightHost {
  return {
    env,
    findProgram: (program, cwd) => findProgram(program, cwd, env.PATH ?? ""),
    readVersion: (argv, cwd) =>
      new Promise((done) => {
        try {
          const child = execFile(argv[0]!, argv.slice(1), { cwd, timeout: VERSION_TIMEOUT_MS, encoding: "utf8", env: env as NodeJS.ProcessEnv, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
            const first = `${stdout}`.trim().split("\n")[0] || `${stderr}`.trim().split("\n")[0];
            done(error || !first ? null : first.trim());
          });
          child.stdin?.end();
          // a slow version command never keeps phaseloop alive once the run is over
          child.unref();
        } catch {
          done(null);
        }
      }),
  };
}

/** A file with an execute bit (read from its mode: asking the system, access(X_OK), needs Deno's --allow-sys). */
async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const info = await stat(path);
    return info.isFile() && (info.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** As a spawn finds a program: a name with a slash from `cwd`, otherwise along PATH. */
export async function findProgram(program: string, cwd: string, path: string): Promise<string | null> {
  if (program.includes("/")) {
    const full = isAbsolute(program) ? program : resolve(cwd, program);
    return (await isExecutableFile(full)) ? full : null;
  }
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const full = join(resolve(cwd, dir), program);
    if (await isExecutableFile(full)) return full;
  }
  return null;
}
