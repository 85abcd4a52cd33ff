import type { AgentAdapter } from "./agent-adapter.ts";
import { createTextParser } from "./text-parser.ts";

/**
 * aider: the prompt in a message file, no auto-commits, no shell suggestions
 * (`--yes-always` would otherwise run them). Output is human text: success is
 * the exit code plus phaseloop's own checks (outputs, measured changes).
 */
export const aiderAgent: AgentAdapter = {
  name: "aider",
  versionArgv: ["aider", "--version"],
  buildInvocation(input) {
    const argv = ["aider", "--message-file", input.promptFile, "--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty", "--no-suggest-shell-commands"];
    if (input.agent.model) argv.push("--model", input.agent.model);
    argv.push(...(input.agent.args ?? []).map(input.render));
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, env, outputFormat: "text" };
  },
  createParser: createTextParser,
};
