/**
 * Configuration files phaseloop writes for an agent CLI (a policy, settings),
 * never in the repository: in a directory of the user's own, each file named
 * after its content so that a phase reuses it and no two phases' files meet.
 * The directory and each one above it must be writable by their owner only
 * (Gemini CLI skips a system settings file below a world-writable `/tmp`):
 * PHASELOOP_AGENT_CONFIG_DIR, else `phaseloop/agent-config` in the cache
 * folder of `$XDG_CACHE_HOME`, `$HOME` or the account's home directory.
 * Files and the environment are the host's, given by the caller.
 */
import { createHash } from "node:crypto";
import { homedir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";

/** What the private folder is made with: the host's files (as the runner's host has them), its environment, its pid. */
export interface PrivateConfigHost {
  readonly files: {
    exists(path: string): boolean;
    stat(path: string): { mode: number } | undefined;
    lstat(path: string): { isDirectory(): boolean; uid?: number } | undefined;
    mkdir(path: string, options?: { mode?: number }): void;
    writeText(path: string, data: string, options?: { mode?: number }): void;
    rename(from: string, to: string): void;
  };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly pid: number;
}

const chosen = new WeakMap<PrivateConfigHost["files"], string>();

/** The private directory, created 0700 if need be; an error names why no candidate would do. */
export function privateConfigDir(host: PrivateConfigHost): string {
  const { files } = host;
  const known = chosen.get(files);
  if (known && files.exists(known)) return known;
  const env = host.env;
  const candidates = [
    env.PHASELOOP_AGENT_CONFIG_DIR,
    env.XDG_CACHE_HOME && join(env.XDG_CACHE_HOME, "phaseloop/agent-config"),
    join(homedir(), ".cache/phaseloop/agent-config"),
    safeAccountHome() && join(safeAccountHome()!, ".cache/phaseloop/agent-config"),
  ].filter((c): c is string => !!c);
  const reasons: string[] = [];
  for (const dir of candidates) {
    const why = insecureAncestor(files, dir);
    if (why) {
      reasons.push(`${dir}: ${why}`);
      continue;
    }
    try {
      files.mkdir(dir, { mode: 0o700 });
      const st = files.lstat(dir);
      if (!st?.isDirectory() || (typeof process.getuid === "function" && st.uid !== process.getuid())) {
        reasons.push(`${dir}: not a directory of this user`);
        continue;
      }
      chosen.set(files, dir);
      return dir;
    } catch (error) {
      reasons.push(`${dir}: ${(error as Error).message}`);
    }
  }
  throw new Error(`no private folder for the agent's configuration (set PHASELOOP_AGENT_CONFIG_DIR): ${reasons.join("; ")}`);
}

function safeAccountHome(): string | undefined {
  try {
    return userInfo().homedir || undefined;
  } catch {
    return undefined;
  }
}

/** Why `dir` or a folder above it that exists is writable by others, or undefined. */
function insecureAncestor(files: PrivateConfigHost["files"], dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    if (files.exists(d)) {
      const st = files.stat(d);
      if (st && (st.mode & 0o022) !== 0) return `${d} is writable by group or others`;
    }
    if (dirname(d) === d) return undefined;
  }
}

/** Write `content` as `NAME-HASH.EXT` in the private directory (once) and return its path. */
export function privateConfigFile(host: PrivateConfigHost, name: string, ext: string, content: string): string {
  const hash = createHash("sha256").update(content).digest("hex").slice(0, 24);
  const path = join(privateConfigDir(host), `${name}-${hash}.${ext}`);
  if (!host.files.exists(path)) {
    const tmp = `${path}.${host.pid}.tmp`;
    host.files.writeText(tmp, content, { mode: 0o600 });
    host.files.rename(tmp, path);
  }
  return path;
}
