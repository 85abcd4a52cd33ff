/**
 * The MCP servers Codex CLI would start from its own config layers: the
 * user's `$CODEX_HOME/config.toml` (else `~/.codex/config.toml`) and a
 * project's `.codex/config.toml` (honoured when the project is trusted).
 * phaseloop switches each of them off for a phase (`enabled=false`), since a
 * `-c` override cannot empty a table that a config layer fills.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { parse as parseToml } from "smol-toml";

export function codexConfigServers(env: Record<string, string | undefined>, workdir: string): string[] {
  const home = env.CODEX_HOME || join(env.HOME || homedir(), ".codex");
  const names = new Set<string>();
  for (const file of [join(home, "config.toml"), join(workdir, ".codex/config.toml")]) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    try {
      const config = parseToml(text) as { mcp_servers?: Record<string, unknown>; profiles?: Record<string, { mcp_servers?: Record<string, unknown> }> };
      for (const name of Object.keys(config.mcp_servers ?? {})) names.add(name);
      for (const p of Object.values(config.profiles ?? {})) for (const name of Object.keys(p?.mcp_servers ?? {})) names.add(name);
    } catch {
      // codex itself will say what is wrong with it
    }
  }
  return [...names];
}
