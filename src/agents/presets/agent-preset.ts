/**
 * An agent CLI's preset, described in two halves. Its traits
 * (pipeline/presets/NAME.ts: name, program, install hint, what it supports,
 * its sandbox needs) are data low in the layers, which the pipeline's checks,
 * the schema and the sandbox compiler read. Its description here
 * (agents/presets/NAME.ts) spreads those traits and adds how to start the CLI
 * (argv, its allowlist and MCP servers in the CLI's own form) and how to read
 * its event stream and judge its result. Both halves are listed, one line
 * each, in their folder's `registry.ts`.
 *
 * Pure, like every file in this folder. What starting a CLI needs from the
 * machine (writing a private configuration file, reading the CLI's own config)
 * reaches a preset through `PresetEffects`, given by `get-adapter.ts`, which
 * turns a description into the runner's `AgentAdapter`.
 */
import type { PresetTraits } from "../../pipeline/presets/preset-traits.ts";
import type { AgentInvocation, AgentInvocationInput, StreamParser } from "../agent-adapter.ts";

/** What a preset may ask of the machine while it builds its invocation. */
export interface PresetEffects {
  /** Write a configuration file of the CLI's own outside the repository; its path (see private-config.ts). */
  configFile(name: string, extension: string, text: string): string;
  /** The environment phaseloop was started with. */
  env: Readonly<Record<string, string | undefined>>;
  /** The account's home directory (for a CLI that finds its config there when HOME is unset). */
  homedir(): string;
  /** A file's text, or undefined when it cannot be read. */
  readText(path: string): string | undefined;
}

export interface AgentPreset extends PresetTraits {
  /** argv, stdin and environment of one phase's process. */
  invocation(input: AgentInvocationInput, fx: PresetEffects): AgentInvocation;
  /** A parser of its stdout (and stderr), which judges the result at the end. */
  createParser(): StreamParser;
}
