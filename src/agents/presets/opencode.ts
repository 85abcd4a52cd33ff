/**
 * The opencode preset. opencode headless: `opencode run --format json` in the
 * workdir (`--dir`), the prompt on stdin, the model as `provider/model` (`-m`).
 * Its tool set is opencode's own permission rules, given in
 * OPENCODE_PERMISSION (merged over every config file; the last rule that
 * matches a call decides, so each list starts with `"*": "deny"`); a call they
 * refuse comes back as a tool part in state `error` and fails the phase. The
 * repository's opencode.json and .opencode folder are not read
 * (OPENCODE_DISABLE_PROJECT_CONFIG), no plugin of the user's loads (`--pure`),
 * no update, model list, LSP download or share link is fetched. With a
 * `base_url`, the agent's API is an OpenAI-compatible provider of its own
 * (OPENCODE_CONFIG_CONTENT), its key read from `api_key_env`
 * (OPENAI_API_KEY by default). There is no terminal result event: a
 * `step_finish` whose reason is not `tool-calls` ends the session, an `error`
 * event fails it in the API's own words.
 */
import type { ToolSetSpec } from "../../pipeline/spec.ts";
import type { ToolCall } from "../agent-adapter.ts";
import { brief, createStreamParser, num, str, type Decoded, type Ev, type StreamPreset } from "../stream-json.ts";
import { expandBraces } from "../tool-globs.ts";
import type { AgentPreset } from "./agent-preset.ts";

type Action = "allow" | "deny";
type Rules = Action | Record<string, Action>;

/** Tools that are not files nor commands: refused in a phase with a tool set. */
const OTHER_TOOLS = ["webfetch", "websearch", "codesearch", "task", "skill", "lsp", "question", "doom_loop"] as const;

/** A glob as opencode's rules match it: relative to the workdir, without `./`, braces expanded. */
function ruleGlobs(globs: readonly string[]): string[] {
  return globs.flatMap((g) => expandBraces(g)).map((g) => g.replace(/^(?:\.\/)+/, ""));
}

function allowOnly(patterns: readonly string[]): Rules {
  if (patterns.length === 0) return "deny";
  const rules: Record<string, Action> = { "*": "deny" };
  for (const p of patterns) rules[p] = "allow";
  return rules;
}

/** The neutral tool set as opencode's permission rules (OPENCODE_PERMISSION). */
export function opencodePermission(tools: ToolSetSpec | undefined): Record<string, Rules> {
  // without a tool set the workdir is the agent's; outside it nothing, and no question it cannot ask
  if (!tools) return { read: "allow", edit: "allow", bash: "allow", glob: "allow", grep: "allow", list: "allow", external_directory: "deny", question: "deny", doom_loop: "deny" };
  const read = ruleGlobs([...(tools.read ?? []), ...(tools.write ?? [])]);
  const write = ruleGlobs(tools.write ?? []);
  const searches: Action = read.length ? "allow" : "deny";
  const out: Record<string, Rules> = {
    read: allowOnly(read),
    edit: allowOnly(write),
    bash: allowOnly((tools.bash ?? []).map((b) => b.trim())),
    // a search names a folder, not the files it reads: checked afterwards against the read globs
    glob: searches,
    grep: searches,
    list: searches,
    external_directory: "deny",
  };
  for (const t of OTHER_TOOLS) out[t] = "deny";
  return out;
}

/** Environment that keeps a headless session to its job: no update, no model list, no downloads, no shares, no project config. */
export const OPENCODE_ENV: Readonly<Record<string, string>> = {
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_PROJECT_CONFIG: "1",
  OPENCODE_DISABLE_CLAUDE_CODE: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
};

export const opencode: AgentPreset = {
  name: "opencode",
  program: "opencode",
  versionArgv: ["opencode", "--version"],
  installHint: "install opencode (npm install -g opencode-ai), or change the preset",
  outputFormat: "opencode-json",
  sessions: true,
  mcp: false,
  sandbox: {
    hosts: ["opencode.ai", "api.openai.com", "api.anthropic.com", "openrouter.ai"],
    baseUrlVars: ["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"],
    state: [".local/share/opencode", ".local/state/opencode", ".cache/opencode", ".config/opencode"],
    stateConfig: [],
    homeConfig: [".config/opencode/opencode.json", ".config/opencode/opencode.jsonc", ".config/opencode/config.json", ".config/opencode/AGENTS.md", ".config/opencode/agent", ".config/opencode/agents", ".config/opencode/command", ".config/opencode/commands", ".config/opencode/plugin", ".config/opencode/plugins", ".config/opencode/tool", ".config/opencode/tools", ".config/opencode/skill", ".config/opencode/skills"],
    // its plugin install (npm), the model list, its share service
    housekeeping: ["registry.npmjs.org", "models.dev", "opencode.ai", "api.opencode.ai"],
    projectConfig: ["opencode.json", "opencode.jsonc", ".opencode"],
    envPrefixes: ["OPENCODE_", "OPENAI_", "ANTHROPIC_"],
    // the user's providers (`provider.NAME.options.baseURL`, keys as `{env:NAME}`)
    ownConfig: {
      file: (env, homedir) => `${env.XDG_CONFIG_HOME || `${env.HOME || homedir}/.config`}/opencode/opencode.json`,
      read: opencodeProviders,
    },
  },
  invocation(input, fx) {
    const argv = ["opencode", "run", "--format", "json", "--pure", "--dir", input.workdir];
    const env: Record<string, string> = { ...OPENCODE_ENV, OPENCODE_PERMISSION: JSON.stringify(opencodePermission(input.tools)) };
    const model = input.agent.model;
    if (input.agent.base_url) {
      // an OpenAI-compatible API of the pipeline's: a provider of its own, the key from the environment
      const keyVar = input.agent.api_key_env ?? "OPENAI_API_KEY";
      const models = model ? { [model]: { name: model } } : {};
      env.OPENCODE_CONFIG_CONTENT = JSON.stringify({ provider: { phaseloop: { npm: "@ai-sdk/openai-compatible", name: "phaseloop", options: { baseURL: input.agent.base_url, apiKey: `{env:${keyVar}}` }, models } } });
      const key = fx.env[keyVar];
      if (key !== undefined) env[keyVar] = key;
      if (model) argv.push("-m", `phaseloop/${model}`);
    } else if (model) argv.push("-m", model);
    // a session continued, by the id its events carry
    if (input.session) argv.push("--session", input.session);
    argv.push(...(input.agent.args ?? []).map(input.render));
    for (const [k, v] of Object.entries(input.agent.env ?? {})) env[k] = input.render(v);
    return { argv, stdin: input.prompt, env, outputFormat: "opencode-json" };
  },
  createParser: createOpencodeParser,
};

/** The base URLs and key variables of the providers in opencode's own config (JSON with comments). */
function opencodeProviders(text: string): { baseUrls: string[]; envKeys: string[] } {
  return {
    baseUrls: [...text.matchAll(/"baseURL"\s*:\s*"([^"\\]+)"/g)].map((m) => m[1]!),
    envKeys: [...new Set([...text.matchAll(/\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!))],
  };
}

const READS = new Set(["read", "glob", "grep", "list"]);
const WRITES = new Set(["write", "edit", "multiedit", "patch", "apply_patch"]);

/** The paths a patch names (`*** Add File: p`, `*** Update File: p`, `*** Delete File: p`, `*** Move to: p`). */
function patchPaths(text: string): string[] {
  return [...text.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm)].map((m) => m[1]!.trim());
}

function toolCall(part: Ev): ToolCall {
  const name = String(part.tool ?? "?");
  const state = (part.state ?? {}) as Ev;
  const input = (state.input && typeof state.input === "object" ? state.input : {}) as Ev;
  const paths = [input.filePath, input.path, ...(typeof input.patchText === "string" ? patchPaths(input.patchText) : [])].filter((p): p is string => typeof p === "string" && p !== "");
  const kind: ToolCall["kind"] = name === "bash" ? "bash" : READS.has(name) ? "read" : WRITES.has(name) ? "write" : "other";
  const search = name === "glob" || name === "grep" || name === "list";
  if (search && paths.length === 0) paths.push(".");
  const call: ToolCall = { tool: name, kind, paths, command: kind === "bash" ? str(input.command) : undefined, search: search || undefined, id: str(part.callID), input };
  // opencode refused it: "The user has specified a rule which prevents you from using this specific tool call…"
  const error = str(state.error);
  if (state.status === "error" && error && /\brule which prevents\b|\bpermission\b|\brejected\b|\bdenied\b/i.test(error)) call.refused = brief(error.split(". ")[0] ?? error, 200);
  return call;
}

function opencodeStream(): StreamPreset {
  let lastError: Ev | undefined;
  return {
    name: "opencode",
    decode(ev): Decoded | undefined {
      const d: Decoded = { session: str(ev.sessionID) };
      const part = (ev.part ?? {}) as Ev;
      if (ev.type === "text" && typeof part.text === "string") {
        d.text = part.text;
        d.display = part.text.trim().split("\n").filter((l) => l.trim()).map((l) => brief(l, 200));
      } else if (ev.type === "tool_use") {
        const call = toolCall(part);
        d.tools = [call];
        d.display = [`→ ${call.command !== undefined ? `$ ${brief(call.command, 140)}` : `${call.tool}${call.paths.length ? ` ${call.paths.join(" ")}` : ""}`}`];
        if (call.refused) {
          d.refused = [{ id: call.id, tool: call.tool, reason: call.refused, input: call.input }];
          d.display.push(`✗ refused: ${brief(call.refused, 120)}`);
        }
      } else if (ev.type === "step_finish") {
        const t = (part.tokens ?? {}) as Ev;
        const cache = (t.cache ?? {}) as Ev;
        d.usage = { tokens: num(t.input) + num(t.output) + num(t.reasoning) + num(cache.read) + num(cache.write), costUsd: num(part.cost) };
        // the last step: the model stopped without asking for a tool
        if (part.reason !== "tool-calls") {
          d.terminal = true;
          d.display = ["✓ done"];
        }
      } else if (ev.type === "error") {
        lastError = (ev.error ?? {}) as Ev;
        d.terminal = true;
        d.display = [`✗ ${brief(errorMessage(lastError), 160)}`];
      }
      return d;
    },
    judge(terminal, seen) {
      if (terminal?.type === "step_finish" && !lastError) {
        const refused = seen.toolCalls.filter((c) => c.refused);
        if (refused.length > 0) return { success: false, error: { class: "policy_violation", message: `opencode was refused ${refused.slice(0, 5).map((c) => `${c.tool}${c.command !== undefined ? ` \`${brief(c.command, 120)}\`` : c.paths.length ? ` ${c.paths.join(" ")}` : ""}`).join("; ")}` } };
        return { success: true };
      }
      if (!lastError) return { success: false, error: { class: "agent_error", message: `opencode ended without finishing its last step${seen.exitCode ? ` (exit ${seen.exitCode})` : ""}` } };
      const data = (lastError.data ?? {}) as Ev;
      const status = num(data.statusCode);
      const transient = status === 429 || (status >= 500 && status < 600);
      const message = errorMessage(lastError);
      return { success: false, error: { class: transient ? "transient" : "agent_error", message: `opencode: ${brief(message, 400)}${status && !message.includes(String(status)) ? ` (HTTP ${status})` : ""}` } };
    },
  };
}

/** An error event's words: the API's message, else the error's name. */
function errorMessage(error: Ev): string {
  const data = (error.data ?? {}) as Ev;
  return str(data.message) ?? str(error.message) ?? str(error.name) ?? "error";
}

export function createOpencodeParser() {
  return createStreamParser(opencodeStream());
}
