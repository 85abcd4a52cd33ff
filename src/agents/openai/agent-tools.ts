/**
 * The tools of the built-in OpenAI-compatible agent, built from the phase's
 * tool set: read_file and list_files within its `read` globs, write_file
 * within its `write` globs, run_command for its `bash` patterns. Every path
 * must stay inside the workdir (no `..`, no absolute path elsewhere, no
 * symlink that leads out) and outside `.git` and `.phaseloop`, and within the
 * bounds of open-inside.ts (length, name length, depth); a listing looks at a
 * bounded number of entries. A refused call is answered with the reason, so
 * the model can do something else. A listing reads the folders through the
 * host's files; reads and writes go through open-inside.ts's confined helpers.
 */
import { join, relative, sep } from "node:path";
import type { HostFiles } from "../../host/host.ts";
import type { ToolSetSpec } from "../../pipeline/spec.ts";
import { AGENT_PROTECTED, PATH_MAX_DEPTH, placeInside, readInside, writeInside } from "../../host/open-inside.ts";
import { PROTECTED_NAMES } from "../../sandbox/bwrap-args.ts";
import { allowedBy, outputFlagOrEscape, splitCommand } from "../command-words.ts";

/** What a tool call returns to the model, and whether the allowlist refused it. */
export interface ToolOutcome {
  content: string;
  refused?: string;
}

/** Runs an allowed command (argv, no shell) in the workdir. */
export type CommandRunner = (argv: string[], signal?: AbortSignal) => Promise<{ exitCode: number | null; output: string; timedOut: boolean }>;

export interface AgentTools {
  /** Tool definitions for the chat completions request (empty: a plain completion). */
  definitions: ToolDefinition[];
  call(name: string, argumentsJson: string): Promise<ToolOutcome>;
}

export interface ToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** A tool result longer than this is cut, with a note saying so. */
export const TOOL_OUTPUT_CAP = 16_000;
const LIST_CAP = 500;
/** Directory entries list_files looks at, at most: a huge tree is cut, not walked for minutes. */
const LIST_VISIT_CAP = 20_000;
const PROTECTED: readonly string[] = AGENT_PROTECTED;
const WRITE_PROTECTED: readonly string[] = [...AGENT_PROTECTED, ...PROTECTED_NAMES];
/** More than this is never read into memory for the model. */
const READ_CAP_BYTES = TOOL_OUTPUT_CAP * 4;

type GlobMatcher = (path: string) => boolean;

export function createAgentTools(options: { tools: ToolSetSpec | undefined; workdir: string; runCommand: CommandRunner; glob: (patterns: string[]) => GlobMatcher; files: Pick<HostFiles, "readdir" | "lstat" | "realpath"> }): AgentTools {
  const { tools, workdir } = options;
  const readGlobs = tools?.read ?? [];
  const writeGlobs = tools?.write ?? [];
  const bash = tools?.bash ?? [];
  const canRead = readGlobs.length ? options.glob(readGlobs) : () => false;
  const canWrite = writeGlobs.length ? options.glob(writeGlobs) : () => false;

  const definitions: ToolDefinition[] = [];
  const define = (name: string, description: string, properties: Record<string, unknown>, required: string[]) =>
    definitions.push({ type: "function", function: { name, description, parameters: { type: "object", properties, required, additionalProperties: false } } });
  if (readGlobs.length) {
    define("read_file", `Read a text file of the workspace. Readable: ${readGlobs.join(", ")}.`, { path: { type: "string", description: "Path relative to the workspace root." } }, ["path"]);
    define("list_files", "List the files of the workspace under a directory (relative to the workspace root; '.' for all).", { path: { type: "string", description: "A directory relative to the workspace root." } }, ["path"]);
  }
  if (writeGlobs.length) {
    define("write_file", `Create or replace a text file of the workspace. Writable: ${writeGlobs.join(", ")}.`, { path: { type: "string", description: "Path relative to the workspace root." }, content: { type: "string", description: "The whole new content." } }, ["path", "content"]);
  }
  if (bash.length) {
    define("run_command", `Run a command in the workspace root, without a shell (no pipes, redirections or variables). Allowed: ${bash.map((b) => JSON.stringify(b)).join(", ")}.`, { command: { type: "string", description: "The command line, e.g. npm test" } }, ["command"]);
  }

  /** The workspace-relative form of a path the model gave, or why it is refused. */
  const place = (path: unknown): { rel: string; abs: string } | { refused: string } => {
    if (typeof path !== "string" || path.trim() === "") return { refused: "a path is required" };
    const placed = placeInside(workdir, path, { protect: PROTECTED });
    return placed.ok ? placed : { refused: placed.reason };
  };

  const handlers: Record<string, (args: Record<string, unknown>) => Promise<ToolOutcome> | ToolOutcome> = {
    read_file: (args) => {
      const p = place(args.path);
      if ("refused" in p) return refuse(p.refused);
      if (!canRead(p.rel)) return refuse(`"${p.rel}" is not readable by this phase's tool set`);
      const r = readInside(workdir, p.rel, { protect: PROTECTED, maxBytes: READ_CAP_BYTES });
      if (!r.ok) return r.missing ? { content: `error: ${r.reason}` } : refuse(r.reason);
      return { content: cap(r.text) };
    },
    list_files: (args) => {
      const p = place(args.path ?? ".");
      if ("refused" in p) return refuse(p.refused);
      const found: string[] = [];
      const { files } = options;
      const root = files.realpath(workdir);
      let visited = 0;
      const walk = (dir: string, depth: number) => {
        if (depth > PATH_MAX_DEPTH) return;
        let names;
        try {
          names = files.readdir(dir);
        } catch {
          return;
        }
        for (const name of names.sort((a, b) => a.localeCompare(b))) {
          if (found.length > LIST_CAP || ++visited > LIST_VISIT_CAP) return;
          const full = join(dir, name);
          const rel = relative(root, full).split(sep).join("/");
          if (PROTECTED.includes(name) || name === "node_modules") continue;
          // the entry itself, never where a link leads (a link to a folder is not walked)
          let folder = false;
          try {
            folder = files.lstat(full)?.isDirectory() ?? false;
          } catch {
            continue; // cannot be looked at (a folder readable but not searchable)
          }
          if (folder) walk(full, depth + 1);
          else if (canRead(rel)) found.push(rel);
        }
      };
      walk(p.abs, 0);
      const more = found.length > LIST_CAP || visited > LIST_VISIT_CAP;
      if (found.length === 0) return { content: more ? `(no readable files among the first ${LIST_VISIT_CAP} entries; list a smaller directory)` : "(no readable files)" };
      return { content: more ? `${found.slice(0, LIST_CAP).join("\n")}\n… (more files not listed; list a smaller directory)` : found.join("\n") };
    },
    write_file: (args) => {
      const p = place(args.path);
      if ("refused" in p) return refuse(p.refused);
      if (!canWrite(p.rel)) return refuse(`"${p.rel}" is not writable by this phase's tool set`);
      if (typeof args.content !== "string") return { content: "error: content must be a string" };
      // the names no phase may write, whatever its globs (every CLI's settings, hook managers): as the OS sandbox keeps them
      const w = writeInside(workdir, String(args.path), args.content, { protect: WRITE_PROTECTED });
      if (!w.ok) return refuse(w.reason);
      return { content: `wrote ${w.rel} (${w.bytes} bytes)` };
    },
    run_command: async (args) => {
      if (typeof args.command !== "string") return { content: "error: command must be a string" };
      const split = splitCommand(args.command);
      if (!split.ok) return refuse(split.reason);
      if (!allowedBy(split.argv, bash)) return refuse(`"${args.command}" is not allowed; allowed: ${bash.join(", ")}`);
      const escape = outputFlagOrEscape(split.argv);
      if (escape) return refuse(escape);
      const r = await options.runCommand(split.argv);
      const status = r.timedOut ? "timed out" : r.exitCode === null ? "killed" : `exit code ${r.exitCode}`;
      return { content: `${status}\n${capKeepingEnd(r.output)}` };
    },
  };

  return {
    definitions,
    async call(name, argumentsJson) {
      // each call starts on a fresh turn of the event loop: however many calls a model sends
      // in one answer, a phase's timeout and Ctrl-C are heard between them
      await new Promise<void>((resolve) => setImmediate(resolve));
      const handler = definitions.some((d) => d.function.name === name) ? handlers[name] : undefined;
      if (!handler) return { content: `error: there is no tool "${name}"; the tools are ${definitions.map((d) => d.function.name).join(", ") || "none"}` };
      let args: unknown;
      try {
        args = argumentsJson.trim() === "" ? {} : JSON.parse(argumentsJson);
      } catch (error) {
        return { content: `error: the arguments are not valid JSON (${(error as Error).message}); send a JSON object` };
      }
      if (typeof args !== "object" || args === null || Array.isArray(args)) return { content: "error: the arguments must be a JSON object" };
      return handler(args as Record<string, unknown>);
    },
  };
}

function refuse(reason: string): ToolOutcome {
  return { content: `refused: ${reason}`, refused: reason };
}

function cap(text: string): string {
  return text.length > TOOL_OUTPUT_CAP ? `${text.slice(0, TOOL_OUTPUT_CAP)}\n… (cut at ${TOOL_OUTPUT_CAP} characters)` : text;
}

/** Command output keeps its start and, mostly, its end, where test runners and compilers sum up. */
function capKeepingEnd(text: string): string {
  if (text.length <= TOOL_OUTPUT_CAP) return text;
  const head = Math.floor(TOOL_OUTPUT_CAP / 4);
  const tail = TOOL_OUTPUT_CAP - head;
  return `${text.slice(0, head)}\n… (${text.length - TOOL_OUTPUT_CAP} characters left out) …\n${text.slice(-tail)}`;
}
