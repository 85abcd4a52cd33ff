/** The agent CLIs' versions, recorded in run.json. */
import { spawnSync } from "node:child_process";
import { getAdapter } from "../agents/get-adapter.ts";
import { openAiBaseUrl } from "../agents/openai-agent.ts";
import type { Machine } from "../machine/types.ts";

/** Agent CLI versions for run.json (presets only; a missing CLI is recorded as such). */
export function agentVersions(machine: Machine): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, agent] of Object.entries(machine.agents)) {
    if (agent.command) {
      out[name] = `command: ${agent.command[0]}`;
      continue;
    }
    if (agent.preset === "openai") {
      out[name] = `openai-compatible: ${openAiBaseUrl(agent)}`;
      continue;
    }
    try {
      const argv = getAdapter(agent).versionArgv;
      if (!argv) continue;
      const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: 5000, stdio: ["ignore", "pipe", "pipe"] });
      out[name] = r.status === 0 ? r.stdout.trim().split("\n")[0]! : "unavailable";
    } catch {
      out[name] = "unavailable";
    }
  }
  return out;
}
