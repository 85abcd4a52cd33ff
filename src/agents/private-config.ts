/**
 * Configuration files phaseloop writes for an agent CLI (a policy, settings),
 * never in the repository: in a directory of the user's own, each file named
 * after its content so that a phase reuses it and no two phases' files meet.
 * The directory and each one above it must be writable by their owner only
 * (Gemini CLI skips a system settings file below a world-writable `/tmp`):
 * PHASELOOP_AGENT_CONFIG_DIR, else `phaseloop/agent-config` in the cache
 * folder of `$XDG_CACHE_HOME`, `$HOME` or the account's home directory.
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";

let chosen: string | undefined;

/** The private directory, created 0700 if need be; an error names why no candidate would do. */
export function privateConfigDir(): string {
  if (chosen && existsSync(chosen)) return chosen;
  const env = process.env;
  const candidates = [
    env.PHASELOOP_AGENT_CONFIG_DIR,
    env.XDG_CACHE_HOME && join(env.XDG_CACHE_HOME, "phaseloop/agent-config"),
    join(homedir(), ".cache/phaseloop/agent-config"),
    safeAccountHome() && join(safeAccountHome()!, ".cache/phaseloop/agent-config"),
  ].filter((c): c is string => !!c);
  const reasons: string[] = [];
  for (const dir of candidates) {
    const why = insecureAncestor(dir);
    if (why) {
      reasons.push(`${dir}: ${why}`);
      continue;
    }
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const st = lstatSync(dir);
      if (!st.isDirectory() || (typeof process.getuid === "function" && st.uid !== process.getuid())) {
        reasons.push(`${dir}: not a directory of this user`);
        continue;
      }
      return (chosen = dir);
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
function insecureAncestor(dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(d)) {
      const st = statSync(d);
      if ((st.mode & 0o022) !== 0) return `${d} is writable by group or others`;
    }
    if (dirname(d) === d) return undefined;
  }
}

/** Write `content` as `NAME-HASH.EXT` in the private directory (once) and return its path. */
export function privateConfigFile(name: string, ext: string, content: string): string {
  const hash = createHash("sha256").update(content).digest("hex").slice(0, 24);
  const path = join(privateConfigDir(), `${name}-${hash}.${ext}`);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, content, { mode: 0o600 });
    renameSync(tmp, path);
  }
  return path;
}
