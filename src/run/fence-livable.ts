/**
 * What makes ordinary work livable inside the fence: the folders a phase's write globs name
 * made before it starts (only a folder that exists can be bound writable), and settings that
 * meet tools' habits (update checks, telemetry, caches under HOME, bytecode and test caches
 * written beside the sources) with a place of the run's own instead of a refusal.
 *
 * Why folders are made beforehand rather than giving the phase an overlay to write into:
 * bubblewrap 0.8 (Debian 12) has no overlay options, so an overlay would need a helper of
 * phaseloop's own mounting overlayfs inside the user namespace, then a merge of the upper
 * layer back into the workdir after every process, on every phase; a folder made beforehand
 * costs one mkdir, keeps the kernel's own check exact at the folder, and what the kernel
 * cannot tell apart inside it (`docs/run.sh` under `docs/*.md`) is undone after the phase.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { HostFiles } from "../host/host.ts";
import { findProgram } from "../host/preflight-host.ts";
import { PRESETS } from "../agents/presets/registry.ts";
import type { SandboxProfile } from "../sandbox/compile-sandbox.ts";
import { isUnder } from "../sandbox/compile-sandbox.ts";
import { isProtectedPath } from "../sandbox/bwrap-args.ts";

/**
 * Make the missing write folders of the profile inside the workdir, one component at a time,
 * never through a symlink. Returns the folders made, outermost first.
 */
export function makeWriteDirs(files: HostFiles, profile: SandboxProfile, workdir: string): string[] {
  const made: string[] = [];
  for (const dir of profile.allowWrite) {
    if (dir === workdir || !isUnder(dir, workdir)) continue;
    // never a `.git`, `.phaseloop` or protected name: one made there would be phaseloop's doing
    const top = dir.slice(workdir.length + 1).split("/")[0]!;
    if (top === ".git" || top === ".phaseloop" || isProtectedPath(top)) continue;
    let at = workdir;
    for (const part of dir.slice(workdir.length + 1).split("/")) {
      at = join(at, part);
      let stat;
      try {
        stat = files.lstat(at);
      } catch {
        break;
      }
      if (stat !== undefined) {
        if (stat.isDirectory()) continue;
        break; // a file or a symlink in the way: left alone, the folder is not bound
      }
      try {
        files.mkdir(at, { mode: 0o755, exclusive: true });
        made.push(at);
      } catch {
        break;
      }
    }
  }
  return made;
}

/** Remove the folders `makeWriteDirs` made that are still empty, innermost first. */
export function removeEmptyMade(files: HostFiles, made: readonly string[]): void {
  for (const dir of [...made].reverse()) {
    try {
      if (files.readdir(dir).length === 0) files.removeDir(dir);
    } catch {
      // gone or in use: left
    }
  }
}

/** Settings that turn off what a tool does on its own over the network: update checks, telemetry, error reports. */
export const QUIET_ENV: Readonly<Record<string, string>> = {
  NPM_CONFIG_UPDATE_NOTIFIER: "false",
  npm_config_update_notifier: "false",
  NO_UPDATE_NOTIFIER: "1",
  npm_config_fund: "false",
  npm_config_audit: "false",
  DO_NOT_TRACK: "1",
  DISABLE_TELEMETRY: "1",
  DISABLE_ERROR_REPORTING: "1",
  DISABLE_AUTOUPDATER: "1",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  GEMINI_TELEMETRY_ENABLED: "false",
  NEXT_TELEMETRY_DISABLED: "1",
  GATSBY_TELEMETRY_DISABLED: "1",
  NUXT_TELEMETRY_DISABLED: "1",
  ASTRO_TELEMETRY_DISABLED: "1",
  DOTNET_CLI_TELEMETRY_OPTOUT: "1",
  HOMEBREW_NO_AUTO_UPDATE: "1",
  PIP_DISABLE_PIP_VERSION_CHECK: "1",
  // git's opportunistic index refresh writes .git, which no phase may
  GIT_OPTIONAL_LOCKS: "0",
};

/**
 * The environment a fenced process gets on top of its own: the quiet settings, caches in the
 * run's cache home instead of the (read-only) home, and, where the phase may not write beside
 * the sources, bytecode, test and build caches moved there too. `user` is what the pipeline
 * or the user set: it wins over everything here but the cache home.
 */
export function livableEnv(profile: SandboxProfile, workdir: string, cacheHome: string, user: Record<string, string | undefined>): Record<string, string> {
  const writable = (rel: string) => profile.allowWrite.some((dir) => isUnder(join(workdir, rel), dir));
  const env: Record<string, string> = { ...QUIET_ENV, XDG_CACHE_HOME: cacheHome, npm_config_cache: join(cacheHome, "npm") };
  if (!writable("__pycache__/x")) env.PYTHONPYCACHEPREFIX = join(cacheHome, "pycache");
  if (!writable(".pytest_cache")) env.PYTEST_ADDOPTS = `${user.PYTEST_ADDOPTS ? `${user.PYTEST_ADDOPTS} ` : ""}-p no:cacheprovider`;
  if (!writable("target")) env.CARGO_TARGET_DIR = join(cacheHome, "cargo-target");
  // a variable the pipeline or the user set is theirs (a cache the user points elsewhere stays theirs only if it is writable)
  for (const name of Object.keys(QUIET_ENV)) if (user[name] !== undefined) delete env[name];
  return env;
}

const shimDirs = new Map<string, string | null>();

/**
 * The folders (a PATH prefix) holding the shims of the CLIs `search` finds whose preset has one
 * (its `sandbox.fenceShim`: codex, however it is started, leaves the sandboxing to the fence);
 * undefined when there is none.
 */
export async function fenceShims(files: HostFiles, runTemp: string, search: string, cwd: string): Promise<string | undefined> {
  const known = shimDirs.get(`${runTemp}\0${search}`);
  if (known !== undefined) return known ?? undefined;
  const dirs: string[] = [];
  for (const preset of PRESETS) {
    const shim = preset.sandbox.fenceShim;
    if (!shim || preset.program === undefined) continue;
    const real = await findProgram(preset.program, cwd, search);
    if (real === null) continue;
    const dir = join(runTemp, `${preset.program}-shim-${createHash("sha256").update(real).digest("hex").slice(0, 12)}`);
    if (!files.exists(join(dir, preset.program))) {
      files.mkdir(dir, { mode: 0o755 });
      files.writeText(join(dir, preset.program), shim(real), { mode: 0o755 });
    }
    dirs.push(dir);
  }
  const found = dirs.length ? dirs.join(":") : null;
  shimDirs.set(`${runTemp}\0${search}`, found);
  return found ?? undefined;
}
