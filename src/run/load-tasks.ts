/**
 * Task sources: a glob of markdown files (one task each) or a JSON file with a
 * pointer to an array. Reading goes through node:fs; parsing is pure and
 * exported for tests.
 */
import { PATH_MAX_DEPTH, readInside } from "../host/open-inside.ts";
import { basename, join } from "node:path";
import { parse as parseYaml } from "yaml";
import type { JsonValue } from "../pipeline/spec.ts";
import type { CompiledTasks, TaskItem } from "../machine/types.ts";
import { resolvePointer } from "../runtime/extract-output.ts";
import type { HostFiles } from "../host/host.ts";
import { nodeFiles } from "../host/node-files.ts";

export class TaskSourceError extends Error {}

/** One markdown task: id from front matter or the file name, title from the first heading. */
export function parseMarkdownTask(fileName: string, text: string): TaskItem {
  let body = text;
  let front: Record<string, unknown> = {};
  const fm = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (fm) {
    try {
      const parsed = parseYaml(fm[1]!) as unknown;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) front = parsed as Record<string, unknown>;
    } catch (error) {
      throw new TaskSourceError(`${fileName}: the front matter is not valid YAML (${(error as Error).message.split("\n")[0]})`);
    }
    body = text.slice(fm[0].length);
  }
  const id = typeof front.id === "string" || typeof front.id === "number" ? String(front.id) : basename(fileName).replace(/\.(md|markdown)$/i, "");
  const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/m.exec(body);
  const title = typeof front.title === "string" ? front.title : heading ? heading[1]! : id;
  const deps = new Set<string>();
  const fmDeps = front.depends_on;
  if (Array.isArray(fmDeps)) fmDeps.forEach((d) => deps.add(String(d)));
  else if (typeof fmDeps === "string") fmDeps.split(",").forEach((d) => d.trim() && deps.add(d.trim()));
  for (const m of text.matchAll(/<!--\s*depends_on:\s*([^>]*?)\s*-->/gi)) m[1]!.split(/[,\s]+/).forEach((d) => d && deps.add(d));
  const status = String(front.status ?? "").toLowerCase();
  return {
    id,
    title,
    body: body.trim(),
    priority: typeof front.priority === "number" ? front.priority : null,
    depends_on: [...deps],
    done: front.done === true || status === "done",
    blocked: front.blocked === true || status === "blocked",
    attempts: 0,
    notes: [],
  };
}

/** Tasks from a JSON document, by pointer and field names. */
export function parseJsonTasks(doc: JsonValue, source: Extract<CompiledTasks["source"], { kind: "json" }>): TaskItem[] {
  const list = resolvePointer(doc, source.pointer);
  if (!Array.isArray(list)) throw new TaskSourceError(`${source.file}: ${source.pointer || "the document"} is not a list of tasks`);
  const f = source.fields;
  return list.map((raw, i) => {
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new TaskSourceError(`${source.file}: task ${i + 1} is not an object`);
    const o = raw as Record<string, JsonValue>;
    const id = o[f.id];
    if (typeof id !== "string" && typeof id !== "number") throw new TaskSourceError(`${source.file}: task ${i + 1} has no "${f.id}"`);
    const notes = o[f.notes];
    const deps = o[f.depends_on];
    const text = (v: JsonValue | undefined) => (typeof v === "string" ? v : "");
    return {
      id: String(id),
      title: text(o[f.title]) || String(id),
      body: [text(o.description), Array.isArray(o.acceptanceCriteria) ? o.acceptanceCriteria.map((c) => `- ${String(c)}`).join("\n") : ""].filter(Boolean).join("\n\n"),
      priority: typeof o[f.priority] === "number" ? (o[f.priority] as number) : null,
      depends_on: Array.isArray(deps) ? deps.map(String) : [],
      done: o[f.done] === true,
      blocked: o[f.blocked] === true,
      attempts: typeof o[f.attempts] === "number" ? (o[f.attempts] as number) : 0,
      notes: Array.isArray(notes) ? notes.map(String) : typeof notes === "string" && notes ? [notes] : [],
    };
  });
}

/** A dependency cycle, as the ids around it, or undefined. */
export function findCycle(tasks: TaskItem[]): string[] | undefined {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 2) return undefined;
    if (state.get(id) === 1) return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 1);
    stack.push(id);
    for (const d of byId.get(id)?.depends_on ?? []) {
      if (!byId.has(d)) continue;
      const c = visit(d);
      if (c) return c;
    }
    stack.pop();
    state.set(id, 2);
    return undefined;
  };
  for (const t of tasks) {
    const c = visit(t.id);
    if (c) return c;
  }
  return undefined;
}

/** Task files are bounded like every path and file a run reads: inside the workdir, no link out, at most this large. */
const MAX_TASK_FILE_BYTES = 2 * 1024 * 1024;
const MAX_TASK_FILES = 10_000;

function readTaskFile(workdir: string, rel: string): string {
  const r = readInside(workdir, rel, { maxBytes: MAX_TASK_FILE_BYTES });
  if (!r.ok) throw new TaskSourceError(r.missing ? `cannot read the task file "${rel}" in ${workdir}` : `cannot read the task file "${rel}": ${r.reason}`);
  if (r.truncated) throw new TaskSourceError(`the task file "${rel}" is larger than ${MAX_TASK_FILE_BYTES / 1024 / 1024} MB`);
  return r.text;
}

export async function loadTasks(spec: CompiledTasks, workdir: string): Promise<TaskItem[]> {
  let tasks: TaskItem[];
  if (spec.source.kind === "glob") {
    // loaded only for glob sources: it reads more modules on start than the rest of a run
    const { globSync } = await import("tinyglobby");
    const files = globSync(spec.source.glob, { cwd: workdir, onlyFiles: true, deep: PATH_MAX_DEPTH }).sort();
    if (files.length > MAX_TASK_FILES) throw new TaskSourceError(`"${spec.source.glob}" matches ${files.length} files; a task queue holds at most ${MAX_TASK_FILES}`);
    tasks = files.map((f) => parseMarkdownTask(f, readTaskFile(workdir, f)));
  } else {
    const text = readTaskFile(workdir, spec.source.file);
    let doc: JsonValue;
    try {
      doc = JSON.parse(text) as JsonValue;
    } catch (error) {
      throw new TaskSourceError(`${spec.source.file} is not valid JSON: ${(error as Error).message}`);
    }
    tasks = parseJsonTasks(doc, spec.source);
  }
  const seen = new Set<string>();
  for (const t of tasks) {
    if (seen.has(t.id)) throw new TaskSourceError(`two tasks have the id "${t.id}"`);
    seen.add(t.id);
  }
  const cycle = findCycle(tasks);
  if (cycle) throw new TaskSourceError(`task dependencies form a cycle: ${cycle.join(" → ")}`);
  return tasks;
}

/** Write a task's state back into its JSON source (write_back: true). */
export function writeBackTask(spec: CompiledTasks, workdir: string, update: { task: string; status: string; attempts: number; reason: string | null }, files: HostFiles = nodeFiles): void {
  if (spec.source.kind !== "json" || !spec.source.writeBack) return;
  const path = join(workdir, spec.source.file);
  const doc = JSON.parse(files.readText(path)) as JsonValue;
  const list = resolvePointer(doc, spec.source.pointer);
  if (!Array.isArray(list)) return;
  const f = spec.source.fields;
  const item = list.find((o) => o && typeof o === "object" && !Array.isArray(o) && String((o as Record<string, JsonValue>)[f.id]) === update.task) as Record<string, JsonValue> | undefined;
  if (!item) return;
  item[f.done] = update.status === "done";
  if (update.status === "blocked" || item[f.blocked] !== undefined) item[f.blocked] = update.status === "blocked";
  item[f.attempts] = update.attempts;
  if (update.reason) {
    const note = update.status === "blocked" ? `[BLOCKED] ${update.reason}` : `[REJECTED] ${update.reason}`;
    const notes = item[f.notes];
    item[f.notes] = Array.isArray(notes) ? [...notes, note] : typeof notes === "string" && notes ? `${notes}\n${note}` : note;
  }
  files.writeAtomic(path, JSON.stringify(doc, null, 2) + "\n");
}
