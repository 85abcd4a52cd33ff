// Source of schemas/pipeline.schema.json. Run `node scripts/schema-src.mjs` to
// regenerate the JSON; the JSON file is what is published and committed. The
// agent presets (their names, event streams, which need a model) come from
// src/agents/presets/registry.ts, bundled here in memory; a test checks the
// committed JSON against the registry.
import { writeFileSync } from "node:fs";
import { rolldown } from "rolldown";

const registry = await rolldown({ input: new URL("../src/pipeline/presets/registry.ts", import.meta.url).pathname, platform: "neutral", logLevel: "warn" });
const { PRESETS } = await import(`data:text/javascript;base64,${Buffer.from((await registry.generate({ format: "esm" })).output[0].code).toString("base64")}`);
const presetNames = PRESETS.map((p) => p.name);
const outputFormats = ["text", ...PRESETS.flatMap((p) => (p.outputFormat === undefined ? [] : [p.outputFormat]))];
const needModel = PRESETS.filter((p) => p.needsModel).map((p) => p.name);

const d = (description, extra = {}) => ({ description, ...extra });
const ref = (name, description) => (description ? { $ref: `#/$defs/${name}`, description } : { $ref: `#/$defs/${name}` });
const closed = (description, properties, extra = {}) => ({ type: "object", description, additionalProperties: false, properties, ...extra });
const NAME = "^[A-Za-z_][A-Za-z0-9_-]*$";

const errorClasses = ["timeout", "idle_timeout", "exit_nonzero", "output_invalid", "policy_violation", "transient", "agent_error", "spawn_error", "hook_failed", "join_failed", "pipeline_failed"];

const schema = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  title: "phaseloop pipeline (format v1)",
  description: "An agentic coding loop: its phases, the agent or command each runs, tool allowlists, how results are read, where control goes next, and when to stop.",
  type: "object",
  additionalProperties: false,
  required: ["phaseloop", "name"],
  // a pipeline that extends another takes its phases and stop from it
  if: { not: { required: ["extends"] } },
  then: { required: ["phases", "stop"] },
  properties: {
    $schema: d("The JSON Schema this file follows, for editors.", { type: "string" }),
    extends: d("A pipeline this one is built on: \"./base.yaml\" (relative to this file) or a file of an installed package (\"@acme/loops/execute-review.yaml\"). Maps merge key by key and this file wins; lists are replaced whole; `null` removes a phase, agent, tool set or param.", {
      type: "string", minLength: 1, examples: ["./shared/execute-review.yaml", "phaseloop/execute-review.yaml"],
    }),
    include: d("Files whose `agents`, `tools` and `params` are merged into this pipeline (this file wins; a name defined by two of them is an error).", {
      type: "array", items: { type: "string", minLength: 1 }, examples: [["./shared/agents.yaml"]],
    }),
    phaseloop: d("Format version of this file. Always 1.", { const: 1, examples: [1] }),
    name: d("The pipeline's name, in kebab-case. Shown in progress output and recorded in each run.", {
      type: "string", pattern: "^[a-z][a-z0-9]*(-[a-z0-9]+)*$", examples: ["execute-review"],
    }),
    description: d("One line saying what the loop does.", { type: "string" }),
    params: {
      type: "object",
      description: "Typed inputs. Referenced as `params.NAME` in expressions and templates; set with `--param NAME=VALUE`.",
      propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
      additionalProperties: ref("param"),
      examples: [{ task_file: { type: "string", default: "TASK.md", description: "The task to implement" } }],
    },
    agents: {
      type: "object",
      description: `Named agents. A preset (${presetNames.join(", ")}) or any program given as \`command\`.`,
      propertyNames: { pattern: NAME },
      additionalProperties: ref("agent"),
      examples: [{ worker: { preset: "claude", model: "sonnet" } }],
    },
    tools: {
      type: "object",
      description: "Named tool allowlists in one neutral vocabulary (read and write globs, shell command patterns, MCP tools). Presets translate them to the agent's own flags; file changes are always checked afterwards.",
      propertyNames: { pattern: NAME },
      additionalProperties: ref("toolSet"),
      examples: [{ build: { read: ["**"], write: ["src/**", "test/**"], bash: ["npm test", "git diff *"] } }],
    },
    mcp: {
      type: "object",
      description: "MCP servers, declared once: a program the agent starts (`command`, stdio) or an endpoint it connects to (`url`, streamable HTTP). A phase attaches them by name (`mcp: [NAME]`); its agent gets those servers and no others, and the tool set's `mcp` says which of their tools may be called.",
      propertyNames: { pattern: NAME },
      additionalProperties: ref("mcpServer"),
      examples: [{ review: { command: ["node", "tools/review-server.mjs"], env: { TOKEN: "{{ env.REVIEW_TOKEN }}" } }, docs: { url: "http://127.0.0.1:8808/mcp" } }],
    },
    env: ref("env", "Environment variables for every process the pipeline starts. Values are templates."),
    sandbox: ref("sandboxMode", "Run every phase and hook that starts a process in an OS sandbox: agent phases compiled from their tool sets, `run` phases and hooks with the workdir writable (not `.git` or `.phaseloop`) and no host unless they name it. auto (the default: where the OS provides one, and the run record says when it does not), required (no sandbox is an error before the run starts), off. A phase's or hook's own `sandbox` wins; `--sandbox` on the command line wins over both."),
    on_refusal: d("What a refusal of the OS sandbox does to a phase: fail (the default: the phase fails as policy_violation) or warn (the phase keeps its result; every refusal is still recorded and reported). A phase's own `on_refusal` wins.", { enum: ["fail", "warn"], default: "fail" }),
    phases: {
      type: "object",
      description: "The phases, in order. The first is the loop head: entering it starts a new iteration. Without `next`, control falls through to the next phase; after the last it returns to the loop head.",
      propertyNames: { pattern: NAME },
      minProperties: 1,
      additionalProperties: ref("phase"),
    },
    stop: ref("stop", "When the loop must stop. `max_iterations` is required: there are no unbounded loops."),
    tasks: ref("tasks", "A task queue: each iteration works on the next pending task whose dependencies are done."),
    hooks: ref("hooks", "Commands run around iterations and at the end of the run, with PHASELOOP_* environment variables."),
  },
  $defs: {
    duration: {
      description: "A duration: seconds as a number, or a string such as \"500ms\", \"10s\", \"5m\", \"2h\", \"1h30m\".",
      anyOf: [
        { type: "number", minimum: 0 },
        { type: "string", pattern: "^\\s*(\\d+(\\.\\d+)?(ms|s|m|h|d))+\\s*$|^\\s*\\d+(\\.\\d+)?\\s*$" },
      ],
      examples: ["30m", "10s", "1h30m"],
    },
    positiveCount: {
      description: "A whole number of at least 1, or a template such as \"{{ params.max }}\" resolved when the run starts.",
      anyOf: [{ type: "integer", minimum: 1 }, { type: "string", pattern: "^\\s*\\{\\{.*\\}\\}\\s*$" }],
    },
    count: {
      description: "A whole number, or a template such as \"{{ params.max }}\" resolved when the run starts.",
      anyOf: [{ type: "integer", minimum: 0 }, { type: "string", pattern: "^\\s*\\{\\{.*\\}\\}\\s*$" }],
    },
    expression: { type: "string", minLength: 1, description: "An expression (see docs/expressions.md), e.g. `exit_code == 0 && output.status == 'COMPLETE'`." },
    template: { type: "string", description: "Text with `{{ expression }}` parts." },
    env: {
      type: "object",
      description: "Environment variables; values are templates.",
      propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
      additionalProperties: { type: "string" },
    },
    sandboxMode: { enum: ["auto", "required", "off"], description: "auto: sandboxed where the OS provides it; required: never run unsandboxed; off: no sandbox." },
    host: { type: "string", pattern: "^(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:[0-9]{1,5})?$|^\\[[0-9A-Fa-f:.]+\\](:[0-9]{1,5})?$", description: "A host name (`api.example.com`), a wildcard for its subdomains (`*.example.com`), or an IP address, optionally with `:port`." },
    outcome: { enum: ["complete", "blocked", "failed"], description: "How a run ends: complete (exit 0), blocked (exit 3), failed (exit 1)." },
    errorClass: { enum: errorClasses, description: "Why a phase failed." },
    transient: closed("How a failure is recognised as transient (rate limit, network, overloaded backend). Transient failures back off and retry without tripping breakers.", {
      patterns: d("Regular expressions matched against the tail of the output. Word-bound them: `\\bHTTP 503\\b`, not `503`.", { type: "array", items: { type: "string" } }),
      exit_codes: d("Exit codes that mean a transient failure.", { type: "array", items: { type: "integer" } }),
    }),
    param: closed("A typed input.", {
      type: d("The value's type; `--param` text is converted to it.", { enum: ["string", "number", "integer", "boolean"] }),
      default: d("The value when no `--param` sets it.", { type: ["string", "number", "boolean"] }),
      description: d("What the param is for.", { type: "string" }),
      enum: d("The allowed values.", { type: "array", items: { type: ["string", "number"] }, minItems: 1 }),
      required: d("Whether a value must be given. Default: true when there is no default.", { type: "boolean" }),
    }, { required: ["type"] }),
    agent: closed("An agent: a preset or a command. Any program is an agent.", {
      preset: d("A known agent CLI (its flags, event stream, success test and allowlist translation are built in), or `openai`: phaseloop's own agent for OpenAI-compatible chat completions servers such as Ollama.", { enum: presetNames }),
      command: d("The program and its arguments, each a template. `{{ prompt }}` and `{{ prompt_file }}` are available.", {
        type: "array", items: { type: "string" }, minItems: 1, examples: [["node", "agents/fake.js", "{{ params.task_file }}"]],
      }),
      prompt_via: d("How the prompt reaches the program: on stdin, as an argument, or as a file path argument. Default: stdin.", { enum: ["stdin", "arg", "file"] }),
      prompt_flag: d("With prompt_via arg or file, the flag put before the prompt (e.g. \"-p\"); without it the prompt is the last argument.", { type: "string" }),
      model: d("The model, passed to the preset's model flag. Required by the openai preset.", { type: "string", examples: ["sonnet", "qwen2.5-coder:7b"] }),
      models: d("Model tiers: a phase's `model` that names one of these keys runs with its model. Lets a shared pipeline say `small` and each team map it to a model of its own.", {
        type: "object", propertyNames: { pattern: NAME }, additionalProperties: { type: "string", minLength: 1 }, examples: [{ small: "haiku", large: "opus" }],
      }),
      args: d("Extra arguments appended to the argv.", { type: "array", items: { type: "string" } }),
      env: ref("env", "Environment variables for this agent."),
      output_format: d("How stdout is read: plain text, or an agent's event stream. Presets set it.", { enum: outputFormats }),
      timeout: ref("duration", "Default wall-clock timeout for phases using this agent."),
      idle_timeout: ref("duration", "Default idle timeout (no output) for phases using this agent."),
      base_url: d("openai preset: the server's base URL; requests go to BASE/chat/completions. Default http://localhost:11434/v1 (Ollama).", { type: "string", examples: ["http://localhost:11434/v1", "http://127.0.0.1:8080/v1"] }),
      api_key_env: d("openai preset: the environment variable that holds the API key. Default OPENAI_API_KEY; local servers get a placeholder when it is unset.", { type: "string" }),
      transient: ref("transient"),
      description: d("What this agent is.", { type: "string" }),
    }, { anyOf: [{ required: ["preset"] }, { required: ["command"] }], ...(needModel.length ? { if: { required: ["preset"], properties: { preset: needModel.length === 1 ? { const: needModel[0] } : { enum: needModel } } }, then: { required: ["model"] } } : {}) }),
    toolSet: closed("An allowlist.", {
      read: d("Globs the agent may read, relative to the workdir.", { type: "array", items: { type: "string" } }),
      write: d("Globs the agent may change. A change elsewhere is a policy_violation.", { type: "array", items: { type: "string" } }),
      bash: d("Shell commands allowed, as patterns: \"npm test\", \"git diff *\".", { type: "array", items: { type: "string" } }),
      mcp: d("MCP tools that may be called, as \"server/tool\" or \"server/*\" (every tool of the server); the server is declared under the top-level `mcp` and attached by the phase. A call to any other MCP tool is a policy_violation.", { type: "array", items: { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_-]*(/.+)?$" } }),
      network: d("Hosts the phase's processes may connect to, besides the agent's own API host. In the OS sandbox nothing else is reachable.", { type: "array", items: ref("host"), examples: [["registry.npmjs.org", "*.github.com"]] }),
      on_violation: d("What happens to a change outside `write`: revert it, fail the phase, or warn. Default: fail.", { enum: ["revert", "fail", "warn"], default: "fail" }),
      description: d("What this tool set is for.", { type: "string" }),
    }),
    mcpServer: {
      description: "An MCP server: `command` (a program the agent starts and talks to over stdio) or `url` (a streamable HTTP endpoint).",
      oneOf: [
        closed("A stdio MCP server: the agent starts it for the phase, inside the phase's sandbox, and it ends with the phase.", {
          command: d("The server's program and arguments, each a template. A relative program path is relative to the workdir.", { type: "array", items: { type: "string" }, minItems: 1, examples: [["node", "tools/review-server.mjs"]] }),
          env: ref("env", "The server's environment. Values are templates (`{{ env.TOKEN }}`)."),
          cwd: d("Where the server runs, relative to the workdir (a template). Default: the workdir.", { type: "string" }),
          description: d("What this server offers.", { type: "string" }),
        }, { required: ["command"] }),
        closed("An MCP server reached over streamable HTTP.", {
          url: d("The endpoint (a template). Its host is reachable from the phase's sandbox.", { type: "string", pattern: "^(https?://|\\{\\{)", examples: ["http://127.0.0.1:8808/mcp"] }),
          headers: ref("env", "HTTP headers sent with every request. Values are templates."),
          description: d("What this server offers.", { type: "string" }),
        }, { required: ["url"] }),
      ],
    },
    retry: closed("Retry policy for a failing phase.", {
      max_attempts: d("Attempts in all, the first included. Default 3 (only error classes listed in `on` are retried).", { type: "integer", minimum: 1, default: 3 }),
      on: d("The error classes that are retried. Default: [transient].", { type: "array", items: ref("errorClass"), uniqueItems: true }),
      interval: ref("duration", "Delay before the first retry. Default 10s."),
      backoff: d("Multiplier applied to the delay after each attempt. Default 2.", { type: "number", minimum: 1, default: 2 }),
      max_delay: ref("duration", "Upper bound for the delay. Default 5m."),
      jitter: d("Randomise each delay (between half and all of it). Default false.", { type: "boolean", default: false }),
    }),
    output: closed("How one output value is read from the phase's result. Exactly one of match, tag, section, json, file.", {
      match: d("A regular expression; the value is its first capture group (or the whole match). The last match in the text wins.", { type: "string", examples: ["STATUS:\\s*\\**\\s*(COMPLETE|INCOMPLETE)"] }),
      tag: d("The text inside <TAG>…</TAG> (the last occurrence).", { type: "string", examples: ["verdict"] }),
      section: d("The list items under a heading with this title.", { type: "string", examples: ["NEXT STEPS"] }),
      json: d("The final message parsed as JSON; a string is a JSON pointer into it.", { anyOf: [{ const: true }, { type: "string" }] }),
      file: d("A file the phase writes, relative to the workdir (a template; the run's artifacts folder, {{ run.artifacts }}, is writable by every phase), parsed by extension: .toml, .json, .yaml/.yml, else text. Cleared before the phase runs.", { type: "string", examples: ["{{ run.artifacts }}/review_output.toml"] }),
      format: d("Override the file format.", { enum: ["toml", "json", "yaml", "text"] }),
      from: d("The text extractors read: the agent's final message (default), stdout or stderr.", { enum: ["text", "stdout", "stderr"] }),
      default: d("The value when nothing is found."),
      required: d("A required output that is missing or invalid fails the phase (output_invalid). Default false.", { type: "boolean", default: false }),
      schema: d("A JSON Schema the value must satisfy.", { type: "object" }),
      description: d("What the output means.", { type: "string" }),
    }, { oneOf: [{ required: ["match"] }, { required: ["tag"] }, { required: ["section"] }, { required: ["json"] }, { required: ["file"] }] }),
    rule: closed("A transition rule: the first whose `if` holds wins.", {
      if: ref("expression", "The condition. Without it the rule always applies."),
      goto: d("The phase to go to. Going to the loop head starts the next iteration.", { type: "string", pattern: NAME }),
      stop: ref("outcome", "End the run with this outcome."),
      reason: ref("template", "Why, shown to the user and recorded in the run: the stop reason with `stop`, the task's with `task`; on a rule that goes on while a task is current, why this attempt did not finish it (a [REJECTED] note on the task)."),
      task: d("Mark the current task done or blocked.", { enum: ["done", "blocked"] }),
      label: d("A short name for the rule on graphs (`phaseloop graph`), instead of its condition.", { type: "string", minLength: 1 }),
    }, { oneOf: [{ required: ["goto"] }, { required: ["stop"] }] }),
    exhausted: closed("What happens when a phase with `max_visits` would be entered once more in the same iteration. Default: stop blocked.", {
      goto: d("The phase to go to instead. Going to the loop head starts the next iteration.", { type: "string", pattern: NAME }),
      stop: ref("outcome", "End the run with this outcome."),
      reason: ref("template", "Why, shown to the user and recorded in the run."),
    }, { oneOf: [{ required: ["goto"] }, { required: ["stop"] }] }),
    phase: closed("A phase: an agent with a prompt (agent phase), a command (run phase), or a question to a person (ask phase).", {
      description: d("What the phase does.", { type: "string" }),
      agent: d("The agent that runs this phase (a name under `agents`).", { type: "string", pattern: NAME }),
      prompt: d("The prompt: a file path relative to the pipeline file (.md, .txt) or inline text. A template.", { type: "string" }),
      tools: d("The tool set (a name under `tools`) this phase may use.", { type: "string", pattern: NAME }),
      mcp: d("The MCP servers (names under `mcp`) handed to this phase's agent, and no others: servers in the user's or the repository's own agent settings are not loaded.", { type: "array", items: { type: "string", pattern: NAME }, uniqueItems: true, examples: [["review"]] }),
      run: d("A command phase: a string run by `sh -c` (every interpolated value shell-quoted) or an argv list rendered element by element.", {
        anyOf: [{ type: "string", minLength: 1 }, { type: "array", items: { type: "string" }, minItems: 1 }], examples: ["npm test"],
      }),
      when: ref("expression", "Run the phase only when this holds; otherwise it is skipped and control falls through."),
      timeout: ref("duration", "Wall-clock timeout; the whole process group is killed. Default 30m for agents, 10m for commands."),
      idle_timeout: ref("duration", "Kill the phase when it prints nothing for this long."),
      retry: ref("retry"),
      output: {
        type: "object",
        description: "Named outputs read from the result, available as `output.NAME` (and `phases.PHASE.output.NAME`).",
        propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
        additionalProperties: ref("output"),
      },
      output_schema: d("A JSON Schema for the whole output object.", { type: "object" }),
      next: d("Where control goes: a phase name, or a list of rules (the first whose `if` holds wins).", {
        anyOf: [{ type: "string", pattern: NAME }, { type: "array", items: ref("rule"), minItems: 1 }],
      }),
      env: ref("env", "Environment variables for this phase."),
      success_exit_codes: d("Exit codes that count as success. Default [0].", { type: "array", items: { type: "integer" }, minItems: 1 }),
      consecutive_failures: d("Stop when this phase fails this many times in a row (transient failures excluded).", { type: "integer", minimum: 1 }),
      transient: ref("transient"),
      ask: d("A question to a person: the phase waits for an answer, which rules and templates read as `answer` (and `phases.NAME.answer`). In a terminal it is asked in the live view; without one the run saves its state and exits 3 (awaiting answer) until `phaseloop resume --answer TEXT`. A template.", { type: "string", minLength: 1, examples: ["Review PLAN.md. Answer 'approve' or say what to change."] }),
      parallel: d("A parallel group: these phases (declared under `phases`) run at once, each with its own agent, tools, timeouts and logs, and are visible to later rules as `phases.NAME`. The group is one phase; its `status` follows `join`. Members run only with their group.", { type: "array", items: { type: "string", pattern: NAME }, minItems: 1, uniqueItems: true, examples: [["review-security", "review-tests"]] }),
      join: d("When a parallel group succeeded: all_success (every member succeeded; the default), one_success (at least one), all_done (once all ended, whatever their status).", { enum: ["all_success", "one_success", "all_done"], default: "all_success" }),
      max_visits: d("How many times control may enter this phase in one iteration (runs and `when` skips alike; retries and a resumed run do not count). When it would enter once more, `exhausted` decides. Bounds a cycle that does not pass through the loop head.", { type: "integer", minimum: 1, examples: [3] }),
      exhausted: ref("exhausted"),
      pipeline: d("A sub-pipeline: another pipeline file run as this one phase, with its own phases, limits and state (nested in this run's folder). A path relative to this file (\"./analysis.yaml\") or a file of an installed package (\"@acme/loops/analysis.yaml\"), found as `extends` finds its files. The phase succeeds when the child completes; its outcome and its phases' results are `output`.", { type: "string", minLength: 1, examples: ["./analysis.yaml"] }),
      params: d("The params a sub-pipeline phase binds, by the child's param names. Values are templates evaluated in this pipeline's context, then checked against the child's declared types.", {
        type: "object",
        propertyNames: { pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
        additionalProperties: { type: ["string", "number", "boolean"] },
        examples: [{ area: "{{ params.area }}" }],
      }),
      model: d("The model this phase's agent runs with, overriding the agent's `model`: a tier the agent defines under `models`, or else a model name.", { type: "string", minLength: 1, examples: ["small", "opus"] }),
      session: d("Whether the agent's session continues: fresh (the default: a new session), continue (this agent's latest session in this run), or `{ continue: PHASE }` (the session that phase's latest run left).", {
        anyOf: [{ enum: ["fresh", "continue"] }, closed("Continue the session another phase left.", { continue: d("The phase whose session this phase continues.", { type: "string", pattern: NAME }) }, { required: ["continue"] })],
        examples: ["continue", { continue: "plan" }],
      }),
      sandbox: ref("sandboxMode", "This phase's OS sandbox, overriding the pipeline's. A `run` phase in the sandbox may write the workdir (not `.git` or `.phaseloop`) and reach only the hosts its `network` names; `off` runs it unfenced."),
      network: d("run phases: the hosts the command may reach from the OS sandbox (none by default).", { type: "array", items: ref("host"), examples: [["registry.npmjs.org"]] }),
      on_refusal: d("What a refusal of the OS sandbox does to this phase, overriding the pipeline's: fail (policy_violation) or warn (reported, the result kept).", { enum: ["fail", "warn"] }),
    }, {
      allOf: [
        { not: { required: ["agent", "run"] }, description: "A phase has either `agent` or `run`, not both." },
        { if: { not: { required: ["max_visits"] } }, then: { properties: { exhausted: false } }, description: "`exhausted` needs `max_visits`." },
        { not: { required: ["ask", "agent"] }, description: "An `ask` phase runs no agent." },
        { not: { required: ["ask", "run"] }, description: "An `ask` phase runs no command." },
        { not: { required: ["parallel", "agent"] }, description: "A parallel group runs no agent itself." },
        { not: { required: ["parallel", "run"] }, description: "A parallel group runs no command itself." },
        { not: { required: ["parallel", "ask"] }, description: "A parallel group asks nothing itself." },
        { not: { required: ["pipeline", "agent"] }, description: "A sub-pipeline phase runs no agent itself." },
        { not: { required: ["pipeline", "run"] }, description: "A sub-pipeline phase runs no command itself." },
        { not: { required: ["pipeline", "ask"] }, description: "A sub-pipeline phase asks nothing itself." },
        { not: { required: ["pipeline", "parallel"] }, description: "A sub-pipeline phase is not a parallel group." },
        { anyOf: [{ required: ["agent"] }, { required: ["run"] }, { required: ["ask"] }, { required: ["parallel"] }, { required: ["pipeline"] }] },
        { if: { required: ["pipeline"] }, then: { properties: { prompt: false, tools: false, mcp: false, output: false, output_schema: false, timeout: false, idle_timeout: false, env: false, success_exit_codes: false, transient: false, sandbox: false } }, else: { properties: { params: false } } },
        { if: { required: ["parallel"] }, then: { properties: { prompt: false, tools: false, mcp: false, output: false, output_schema: false, retry: false, timeout: false, idle_timeout: false, env: false, success_exit_codes: false, transient: false } }, else: { properties: { join: false } } },
        { if: { required: ["ask"] }, then: { properties: { prompt: false, tools: false, mcp: false, output: false, output_schema: false, retry: false } } },
        { if: { required: ["agent"] }, then: { required: ["prompt"] } },
        { if: { required: ["run"] }, then: { properties: { prompt: false, tools: false, mcp: false } }, else: { properties: { network: false } } },
        { if: { not: { required: ["agent"] } }, then: { properties: { model: false, session: false } }, description: "`model` and `session` belong to agent phases." },
      ],
    }),
    stopRule: closed("A stop rule, checked after every phase.", {
      if: ref("expression", "The condition."),
      outcome: ref("outcome"),
      reason: ref("template", "Why, shown to the user."),
    }, { required: ["if", "outcome"] }),
    stop: closed("Limits and stop rules. Limits are checked after every phase; an explicit complete reached on the last allowed iteration wins over the limit.", {
      max_iterations: ref("positiveCount", "The most iterations the run may start. Required."),
      max_duration: ref("duration", "The longest the run may take (time spent interrupted not counted)."),
      no_progress: ref("count", "Stop after this many iterations in a row that changed no file (measured in the workspace, not claimed)."),
      consecutive_failures: ref("count", "Stop after this many failed phases in a row (transient failures excluded)."),
      budget: closed("Token and cost budgets, summed over the run from what agents report.", {
        tokens: d("The most tokens the run may use.", { type: "integer", minimum: 1 }),
        cost_usd: d("The most the run may cost, in US dollars.", { type: "number", exclusiveMinimum: 0 }),
      }),
      when: d("Stop rules checked after every phase; the first that holds ends the run.", { type: "array", items: ref("stopRule") }),
    }, { required: ["max_iterations"] }),
    tasks: closed("A task queue.", {
      source: d("Where tasks come from: a glob of markdown files, or a JSON file.", {
        anyOf: [
          closed("Markdown tasks: one file each; id from front matter `id` or the file name, title from the first heading, dependencies from front matter `depends_on` or `<!-- depends_on: a, b -->`.", {
            glob: d("Glob of task files, relative to the workdir.", { type: "string", examples: ["tasks/*.md"] }),
          }, { required: ["glob"] }),
          closed("Tasks in a JSON file.", {
            file: d("The JSON file, relative to the workdir.", { type: "string", examples: [".loop/prd.json"] }),
            pointer: d("JSON pointer to the array of tasks. Default: the root.", { type: "string", examples: ["/userStories"] }),
            fields: closed("Field names in each task object.", Object.fromEntries(
              ["id", "title", "priority", "done", "blocked", "depends_on", "notes", "attempts"].map((k) => [k, d(`The field holding the task's ${k.replace("_", " ")}.`, { type: "string" })]),
            )),
            write_back: d("Write done, blocked, attempts and notes back into the file. Default false.", { type: "boolean", default: false }),
          }, { required: ["file"] }),
        ],
      }),
      max_attempts: ref("positiveCount", "Iterations a task may take before it is blocked and the queue moves on. Default 5."),
      order: d("priority (then source order), or source order alone. Default priority.", { enum: ["priority", "file"], default: "priority" }),
      only: ref("template", "Work on this task only, e.g. \"{{ params.story }}\"; empty means all."),
      final_gate: d("A phase run once all tasks are done; if it fails, the last task is reopened.", { type: "string", pattern: NAME }),
      parallel: d("Tasks worked on at once, each in its own git worktree and branch, merged into the workdir's branch when done. Default 1 (one task at a time, in the workdir). --parallel overrides it.", { type: "integer", minimum: 1, default: 1 }),
    }, { required: ["source"] }),
    hook: {
      description: "A hook command: a string (sh -c), an argv list, or an object with a timeout and a failure policy.",
      anyOf: [
        { type: "string", minLength: 1 },
        { type: "array", items: { type: "string" }, minItems: 1 },
        closed("A hook with options.", {
          run: d("The command: a string (sh -c) or an argv list.", { anyOf: [{ type: "string", minLength: 1 }, { type: "array", items: { type: "string" }, minItems: 1 }] }),
          timeout: ref("duration", "Timeout. Default 1m."),
          on_failure: d("ignore (default): a failing hook is logged. block: the run stops blocked.", { enum: ["ignore", "block"], default: "ignore" }),
          sandbox: ref("sandboxMode", "This hook's OS sandbox, overriding the pipeline's: in it the hook may write the workdir (not `.git` or `.phaseloop`) and reach only the hosts its `network` names; `off` runs it unfenced."),
          network: d("The hosts the hook may reach from the OS sandbox (none by default).", { type: "array", items: ref("host") }),
        }, { required: ["run"] }),
      ],
    },
    hooks: closed("Lifecycle hooks.", Object.fromEntries(
      [["before_iteration", "Before each iteration starts."], ["after_iteration", "After each iteration ends."], ["on_complete", "When the run completes."], ["on_blocked", "When the run stops without completing."], ["on_failed", "When the run fails."]]
        .map(([k, t]) => [k, ref("hook", t)]),
    )),
  },
};

writeFileSync(new URL("../schemas/pipeline.schema.json", import.meta.url), JSON.stringify(schema, null, 2) + "\n");
