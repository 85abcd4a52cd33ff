/**
 * The pipeline document, format v1, as it stands in the YAML file once it has
 * passed the JSON Schema (schemas/pipeline.schema.json). These types and the
 * schema describe the same thing; a test keeps them in step.
 *
 * Everything here is data as the user wrote it: defaults are filled in by
 * `compilePipeline`, in one place, not here.
 */
import type { JsonValue } from "../expr/json-value.ts";

/** A duration: a number of seconds, or a string such as "500ms", "10s", "5m", "2h", "1h30m". */
export type Duration = number | string;

/** A whole number, or a template such as "{{ params.max }}" resolved when the run starts. */
export type Count = number | string;

/** JSON values: the expression language's value type, which outputs and params hold. */
export type { JsonValue };

export type Outcome = "complete" | "blocked" | "failed";

/** Why a phase failed. A failed phase is a state, never a crash. */
export type ErrorClass =
  | "timeout" // wall-clock timeout
  | "idle_timeout" // no output for idle_timeout
  | "exit_nonzero" // process ended with a non-zero exit code or a signal
  | "output_invalid" // a required output is missing, or the output fails its schema
  | "policy_violation" // files changed outside the tool allowlist's write globs, or a required tool was denied
  | "transient" // rate limit, network error, overloaded backend: backs off, never trips breakers
  | "agent_error" // the agent reported failure (codex turn.failed, claude is_error, no terminal event)
  | "spawn_error" // the program could not be started
  | "hook_failed" // a hook with on_failure: block failed
  | "join_failed" // a parallel group whose members did not meet its join
  | "pipeline_failed"; // a sub-pipeline that ended without completing

export interface PipelineDoc {
  /** Format version; always 1. */
  phaseloop: 1;
  /** A base pipeline this file extends (merged away: absent from a loaded document). */
  extends?: string;
  /** Files whose agents, tools and params are merged in (merged away, like `extends`). */
  include?: string[];
  /** kebab-case name. */
  name: string;
  description?: string;
  params?: Record<string, ParamSpec>;
  agents?: Record<string, AgentSpec>;
  tools?: Record<string, ToolSetSpec>;
  /** MCP servers, declared once; a phase attaches them by name (`mcp: [NAME]`). */
  mcp?: Record<string, McpServerSpec>;
  /** Environment for every process the pipeline starts (templated values). */
  env?: Record<string, string>;
  /** Ordered; the first phase is the loop head. */
  phases: Record<string, PhaseSpec>;
  stop: StopSpec;
  tasks?: TasksSpec;
  hooks?: HooksSpec;
  /** The OS sandbox of every phase and hook that runs a process: auto (default), required, off. */
  sandbox?: SandboxMode;
  /** What a refusal of the OS sandbox does to a phase: fail it as policy_violation (default), or only report it. */
  on_refusal?: "fail" | "warn";
}

export type SandboxMode = "auto" | "required" | "off";

export type ParamType = "string" | "number" | "integer" | "boolean";

export interface ParamSpec {
  type: ParamType;
  default?: string | number | boolean;
  description?: string;
  enum?: (string | number)[];
  /** A param without a default is required unless `required: false`. */
  required?: boolean;
}

/** The name of an agent preset: one listed in pipeline/presets/registry.ts (the schema's enum is checked against it). */
export type AgentPreset = string;
export type PromptVia = "stdin" | "arg" | "file";
/** How the agent's stdout is read: plain text ("text"), or a preset's event stream (its `outputFormat`: "claude-stream-json", …). */
export type AgentOutputFormat = string;

export interface AgentSpec {
  /** A known agent CLI; translates tools and limits to its own flags. */
  preset?: AgentPreset;
  /** Any program is an agent: argv, each element a template. `{{ prompt }}` and `{{ prompt_file }}` are available. */
  command?: string[];
  /** How the prompt reaches the program. Default: stdin for `command`, the preset's own way otherwise. */
  prompt_via?: PromptVia;
  /** With prompt_via: arg, the flag put before the prompt (e.g. "-p"); without it the prompt is the last argument. */
  prompt_flag?: string;
  model?: string;
  /** Model tiers: a phase's `model` naming one of these keys runs with its model. */
  models?: Record<string, string>;
  /** Extra arguments appended to the preset's or command's argv. */
  args?: string[];
  env?: Record<string, string>;
  output_format?: AgentOutputFormat;
  /** Default timeouts for phases that use this agent. */
  timeout?: Duration;
  idle_timeout?: Duration;
  /** openai preset: base URL of an OpenAI-compatible server and the env var holding the key. */
  base_url?: string;
  api_key_env?: string;
  /** How a failure of this agent is recognised as transient (rate limit, network). */
  transient?: TransientSpec;
  description?: string;
}

export interface TransientSpec {
  /** Regular expressions matched against the tail of stdout and stderr. Word-bounded by the author, never plain substrings. */
  patterns?: string[];
  exit_codes?: number[];
}

export interface ToolSetSpec {
  /** Globs (relative to the workdir) the agent may read. */
  read?: string[];
  /** Globs the agent may change. Changes elsewhere are a policy_violation. */
  write?: string[];
  /** Shell commands allowed, as patterns: "npm test", "git diff *". */
  bash?: string[];
  /** MCP tools allowed, as "server/tool" or "server/*". */
  mcp?: string[];
  /** Hosts the phase may connect to besides its agent's API host (enforced in the OS sandbox). */
  network?: string[];
  /** What happens to a change outside `write`. Default: fail. */
  on_violation?: "revert" | "fail" | "warn";
  description?: string;
}

/** An MCP server the agent starts (stdio: `command`) or connects to (`url`, streamable HTTP). */
export type McpServerSpec = McpStdioServerSpec | McpHttpServerSpec;

export interface McpStdioServerSpec {
  /** The server's program and arguments, each a template; a relative program path is relative to the workdir. */
  command: string[];
  /** The server's environment (templated values). */
  env?: Record<string, string>;
  /** Where the server runs, relative to the workdir (a template). Default: the workdir. */
  cwd?: string;
  description?: string;
}

export interface McpHttpServerSpec {
  /** The server's streamable HTTP endpoint (a template). */
  url: string;
  /** HTTP headers sent with every request (templated values). */
  headers?: Record<string, string>;
  description?: string;
}

export interface RetrySpec {
  /** Attempts in all, the first included. Default 3 (only error classes in `on` are retried). */
  max_attempts?: number;
  /** Error classes that are retried. Default: [transient]. */
  on?: ErrorClass[];
  interval?: Duration;
  backoff?: number;
  max_delay?: Duration;
  jitter?: boolean;
}

export interface OutputSpec {
  /** Regular expression; the first capture group (or the whole match) is the value. */
  match?: string;
  /** Text inside <tag>…</tag> (the last occurrence). */
  tag?: string;
  /** The list items under a heading with this title ("NEXT STEPS"). */
  section?: string;
  /** The final message parsed as JSON; a string value is a JSON pointer into it. */
  json?: true | string;
  /** A file the phase writes (relative to the workdir), parsed by extension: .toml, .json, .yaml/.yml. */
  file?: string;
  /** Override the file format. */
  format?: "toml" | "json" | "yaml" | "text";
  /** Which text the extractor reads: the agent's final message (default), stdout or stderr. */
  from?: "text" | "stdout" | "stderr";
  default?: JsonValue;
  /** A required output that is missing fails the phase with output_invalid. Default false. */
  required?: boolean;
  /** JSON Schema the value must satisfy. */
  schema?: Record<string, unknown>;
  description?: string;
}

export interface TransitionRule {
  if?: string;
  goto?: string;
  stop?: Outcome;
  /** A template shown to the user as the reason. */
  reason?: string;
  /** Mark the current task. */
  task?: "done" | "blocked";
  /** A short name for the rule on graphs. */
  label?: string;
}

export type Next = string | TransitionRule[];

export interface PhaseSpec {
  description?: string;
  /** Agent phase: the agent, its prompt (file path or inline text), and its tool set. */
  agent?: string;
  prompt?: string;
  tools?: string;
  /** MCP servers (names under `mcp`) handed to this phase's agent, and no others. */
  mcp?: string[];
  /** Command phase: a string run by `sh -c` (interpolations shell-quoted) or an argv list. */
  run?: string | string[];
  /** Skip the phase unless this holds. */
  when?: string;
  timeout?: Duration;
  idle_timeout?: Duration;
  retry?: RetrySpec;
  output?: Record<string, OutputSpec>;
  /** JSON Schema for the whole extracted output object. */
  output_schema?: Record<string, unknown>;
  next?: Next;
  env?: Record<string, string>;
  /** Exit codes that count as success for the process. Default [0]. */
  success_exit_codes?: number[];
  /** Breaker for this phase alone: stop when it fails this many times in a row. */
  consecutive_failures?: number;
  transient?: TransientSpec;
  /** A question to a person (a template); the answer is `answer` / `phases.NAME.answer`. */
  ask?: string;
  /** A parallel group: these phases run at once; the group is one phase whose status follows `join`. */
  parallel?: string[];
  /** When the group succeeded. Default all_success. */
  join?: "all_success" | "one_success" | "all_done";
  /** A sub-pipeline: another pipeline file (a relative path or a package subpath) run as this phase. */
  pipeline?: string;
  /** The params a sub-pipeline phase binds (templates, rendered in this pipeline's context). */
  params?: Record<string, string | number | boolean>;
  /** Entries into this phase allowed per iteration (runs and `when` skips); one more takes `exhausted`. */
  max_visits?: number;
  /** Where control goes when `max_visits` is used up. Default: stop blocked. */
  exhausted?: ExhaustedRule;
  /** This phase's OS sandbox, overriding the pipeline's. */
  sandbox?: SandboxMode;
  /** What a refusal of the OS sandbox does to this phase, overriding the pipeline's. */
  on_refusal?: "fail" | "warn";
  /** run phases: the hosts the command may reach from the OS sandbox. */
  network?: string[];
  /** The model for this phase: a tier of its agent's `models`, or a model name. */
  model?: string;
  /** Whether the agent's session continues. Default fresh. */
  session?: SessionSpec;
}

/** fresh: a new session; continue: this agent's latest session in the run; { continue: PHASE }: the session that phase left. */
export type SessionSpec = "fresh" | "continue" | { continue: string };

/** The rule taken instead of entering a phase whose `max_visits` is used up. */
export interface ExhaustedRule {
  goto?: string;
  stop?: Outcome;
  reason?: string;
}

export interface StopRule {
  if: string;
  outcome: Outcome;
  reason?: string;
}

export interface StopSpec {
  max_iterations: Count;
  max_duration?: Duration;
  /** Iterations in a row that changed no file (measured). */
  no_progress?: Count;
  /** Failed phases in a row (transient failures excluded). */
  consecutive_failures?: Count;
  budget?: { tokens?: number; cost_usd?: number };
  /** Checked after every phase; first match wins. */
  when?: StopRule[];
}

export interface MarkdownTaskSource {
  /** Glob of markdown files, one task each. */
  glob: string;
}

export interface JsonTaskSource {
  /** A JSON file holding the tasks. */
  file: string;
  /** JSON pointer to the array of tasks, e.g. /userStories. Default: the root. */
  pointer?: string;
  /** Field names in each item. */
  fields?: {
    id?: string;
    title?: string;
    priority?: string;
    done?: string;
    blocked?: string;
    depends_on?: string;
    notes?: string;
    attempts?: string;
  };
  /** Write done, blocked, attempts and notes back into the file. Default false. */
  write_back?: boolean;
}

export interface TasksSpec {
  source: MarkdownTaskSource | JsonTaskSource;
  /** Attempts (iterations) a task may take before it is blocked. Default 5. */
  max_attempts?: Count;
  /** priority (then file order), or file order alone. Default priority. */
  order?: "priority" | "file";
  /** Work on this task only (a template, e.g. "{{ params.story }}"); empty means all. */
  only?: string;
  /** A phase run once all tasks are done; if it fails, the last task is reopened. */
  final_gate?: string;
  /** Tasks worked on at once, each in its own git worktree (lanes). Default 1. */
  parallel?: number;
}

export interface HookSpec {
  run: string | string[];
  timeout?: Duration;
  /** ignore (default): a failing hook is logged. block: the run stops blocked. */
  on_failure?: "ignore" | "block";
  /** This hook's OS sandbox, overriding the pipeline's. */
  sandbox?: SandboxMode;
  /** The hosts the hook may reach from the OS sandbox. */
  network?: string[];
}

export type HookName = "before_iteration" | "after_iteration" | "on_complete" | "on_blocked" | "on_failed";
export type HooksSpec = Partial<Record<HookName, string | string[] | HookSpec>>;
