import type { AgentAdapter, AgentInvocationInput, AgentInvocation } from "./agent-adapter.ts";
import { createTextParser } from "./text-parser.ts";
import type { PresetEffects } from "./presets/agent-preset.ts";
import { claudeMcpConfig } from "./presets/claude.ts";
import { CLI_PRESETS } from "./presets/registry.ts";

/**
 * Any program is an agent: argv rendered element by element; the prompt on
 * stdin (default), as an argument, or as a file path. Its MCP configuration is
 * written through `fx` (the host's private folder).
 */
export const commandAgentWith = (fx: Pick<PresetEffects, "configFile">): AgentAdapter => ({
  name: "command",
  buildInvocation(input: AgentInvocationInput): AgentInvocation {
    const { agent } = input;
    const template = agent.command ?? [];
    const usesPromptVar = template.some((t) => /\{\{\s*prompt(_file)?\s*\}\}/.test(t));
    const env: Record<string, string> = {};
    const all = [...template, ...(agent.args ?? [])];
    const argv = input.renderArgv ? input.renderArgv(all, env) : all.map((t) => input.render(t));
    const via = agent.prompt_via ?? "stdin";
    let stdin: string | undefined;
    if (via === "stdin") stdin = input.prompt;
    else if (!usesPromptVar) {
      const value = via === "arg" ? input.prompt : input.promptFile;
      if (agent.prompt_flag) argv.push(agent.prompt_flag);
      argv.push(value);
    }
    for (const [k, v] of Object.entries(agent.env ?? {})) env[k] = input.render(v);
    // a command agent gets the model through the environment, never by a guessed flag
    if (agent.model) env.PHASELOOP_MODEL = agent.model;
    // the phase's MCP servers, described in Claude Code's --mcp-config form
    if (input.mcp?.length) env.PHASELOOP_MCP_CONFIG = fx.configFile("mcp-config", "json", claudeMcpConfig(input.mcp, input.workdir));
    return { argv, stdin, env, outputFormat: agent.output_format ?? "text" };
  },
  createParser: createTextParser,
});

/** The parser for an output format, whatever the agent: the preset's that prints it, else text. */
export function parserFor(format: AgentInvocation["outputFormat"]) {
  const preset = CLI_PRESETS.find((p) => p.outputFormat === format);
  if (preset) return preset.createParser();
  return createTextParser();
}
