/**
 * `phaseloop migrate`: what the rules added since format 1 only warn about (compat-v1.ts),
 * written into the file as the fix the warning names, with the yaml Document API so that
 * comments and layout stay. Pure: text and findings in, text and a list of changes out.
 * An entry the file inherits (from a base it extends or a catalogue it includes) is
 * overridden in the file itself; the shared file is not touched.
 */
import { isMap, isScalar, isSeq, parse, parseDocument, type Document, type Pair } from "yaml";
import { IMPLICIT_MAX_VISITS, type CompatFinding } from "./compat-v1.ts";
import type { PipelineDoc } from "./spec.ts";

export interface MigrateChange {
  /** Where in the document the change is (a JSON pointer). */
  pointer: string;
  message: string;
}

export interface Migrated {
  text: string;
  changes: MigrateChange[];
}

const esc = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * Rewrite `text` (the file's own text) with a fix for each finding. `merged` is the
 * document the findings were made in (with what the file extends and includes).
 */
export function migratePipelineText(text: string, findings: readonly CompatFinding[], merged: PipelineDoc): Migrated {
  if (findings.length === 0) return { text, changes: [] };
  const doc = parseDocument(text, { keepSourceTokens: false });
  const changes: MigrateChange[] = [];
  for (const f of findings) {
    if (f.kind !== "unbounded-cycle") continue;
    const path = ["phases", f.phase];
    doc.setIn([...path, "max_visits"], IMPLICIT_MAX_VISITS);
    if (!f.hasExhausted) doc.setIn([...path, "exhausted"], flow(doc, { stop: "blocked" }));
    changes.push({ pointer: `/phases/${esc(f.phase)}/max_visits`, message: `phase "${f.phase}": max_visits: ${IMPLICIT_MAX_VISITS}${f.hasExhausted ? "" : ", exhausted: { stop: blocked }"} (the cycle ${[...f.cycle, f.phase].join(" → ")} had no bound; the run applied this one)` });
  }
  // allowlist entries, per tool set: the list without the servers nobody declares
  const byToolSet = new Map<string, Extract<CompatFinding, { kind: "undeclared-mcp-server" }>[]>();
  for (const f of findings) if (f.kind === "undeclared-mcp-server") byToolSet.set(f.toolSet, [...(byToolSet.get(f.toolSet) ?? []), f]);
  for (const [set, found] of byToolSet) {
    const list = (merged.tools?.[set]?.mcp ?? []) as unknown[];
    const drop = new Set(found.map((f) => f.index));
    const kept = list.filter((_, i) => !drop.has(i));
    const own = doc.getIn(["tools", set, "mcp"], true);
    if (isSeq(own) && own.items.length === list.length) {
      // the file's own list: remove the entries in place, keeping the others as written
      for (const i of [...drop].sort((a, b) => b - a)) own.items.splice(i, 1);
      if (own.items.length === 0) doc.deleteIn(["tools", set, "mcp"]);
    } else {
      doc.setIn(["tools", set, "mcp"], flow(doc, kept));
    }
    const servers = [...new Set(found.map((f) => f.server))];
    noteOn(doc, set, ` phaseloop migrate: removed ${found.map((f) => `"${f.entry}"`).join(", ")} from mcp: phaseloop starts only the MCP servers declared under mcp; declare ${servers.join(", ")} there to allow ${servers.length === 1 ? "its" : "their"} tools again`);
    for (const f of found) changes.push({ pointer: `/tools/${esc(set)}/mcp/${f.index}`, message: `tool set "${set}": removed "${f.entry}" (MCP server "${f.server}" is not declared under mcp, so the entry allowed nothing)` });
  }
  const written = doc.toString({ lineWidth: 0, minContentWidth: 0, doubleQuotedMinMultiLineLength: Number.MAX_SAFE_INTEGER });
  return { text: keepUnchangedLines(text, written), changes };
}

/**
 * The Document API writes every line in its own style (`{ a: b }` for `{a: b}`, `[ "x" ]`
 * for `["x"]`): where a rewritten line means what the original line meant, the original
 * is kept, so that the file changes only where it was migrated. Lines are matched by a
 * longest-common-subsequence diff (files past MAX_DIFF_LINES are left as written).
 */
const MAX_DIFF_LINES = 4000;

function keepUnchangedLines(original: string, written: string): string {
  const a = original.split("\n");
  const b = written.split("\n");
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) return written;
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..]
  const lcs: Uint16Array[] = Array.from({ length: a.length + 1 }, () => new Uint16Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) for (let j = b.length - 1; j >= 0; j--) lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  const removed: string[] = [];
  const added: string[] = [];
  const flush = () => {
    // a replaced run of lines: keep each original whose rewrite means the same
    let from = 0;
    for (const line of added) {
      let k = from;
      while (k < removed.length && !sameMeaning(removed[k]!, line)) k++;
      if (k < removed.length) {
        out.push(removed[k]!);
        from = k + 1;
      } else out.push(line);
    }
    removed.length = 0;
    added.length = 0;
  };
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      flush();
      out.push(a[i]!);
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) added.push(b[j++]!);
    else removed.push(a[i++]!);
  }
  flush();
  return out.join("\n");
}

function sameMeaning(before: string, after: string): boolean {
  const indent = (l: string) => l.length - l.trimStart().length;
  if (indent(before) !== indent(after)) return false;
  try {
    return JSON.stringify(parse(before.trim())) === JSON.stringify(parse(after.trim()));
  } catch {
    return false;
  }
}

function flow(doc: Document, value: unknown) {
  const node = doc.createNode(value);
  if (isMap(node) || isSeq(node)) node.flow = true;
  return node;
}

/** A comment above a tool set's key, where a reader of the file sees why its list changed. */
function noteOn(doc: Document, set: string, comment: string): void {
  const tools = doc.get("tools", true);
  if (!isMap(tools)) return;
  const pair = tools.items.find((p) => isScalar(p.key) && p.key.value === set) as Pair | undefined;
  if (!pair || !isScalar(pair.key)) return;
  pair.key.commentBefore = pair.key.commentBefore ? `${pair.key.commentBefore}\n${comment}` : comment;
}
