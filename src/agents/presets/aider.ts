/**
 * The aider preset's description: how its CLI is started and read. Its traits (program,
 * install hint, what it supports, its sandbox needs) are pipeline/presets/aider.ts, spread here.
 *
 * aider: the prompt in a message file, no auto-commits, no shell
 * suggestions (`--yes-always` would otherwise run them). Output is human
 * text: success is the exit code plus phaseloop's own checks (outputs,
 * measured changes). aider keeps no session phaseloop can name and has no
 * MCP client; its tool set is checked afterwards only.
 */
import { createTextParser } from "../text-parser.ts";
import { aiderTraits } from "../../pipeline/presets/aider.ts";
import type { AgentPreset } from "./agent-preset.ts";

export const aider: AgentPreset = {
  ...aiderTraits,
  invocation(input) {
    const argv = ["aider", "--message-file", input.promptFile, "--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty", "--no-suggest-shell-commands"];
    if (input.agent.model) argv.push("--model", input.agent.model);
    argv.push(...(input.agent.args ?? []).map(input.render));
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, env, outputFormat: "text" };
  },
  createParser: createTextParser,
};
