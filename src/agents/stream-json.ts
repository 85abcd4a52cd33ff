/**
 * The plumbing every JSON-lines agent CLI shares: a line is parsed leniently
 * (anything that is not a JSON object is stray output, passed over), a
 * preset's decoder says what the event means, and this accumulates it: the
 * session id, the assistant's turns (all kept for the phase log, the last
 * one is the text), tool calls and refusals, tokens and cost, the human
 * lines for the live view, and the terminal event that the preset's judge
 * reads at the end.
 */
import type { AgentRunReport, LineInfo, StreamParser, ToolCall } from "./agent-adapter.ts";

export type Ev = Record<string, unknown>;

/** What one event means, as a preset decodes it. Every field optional. */
export interface Decoded {
  session?: string;
  /** A complete assistant message (one turn's text). */
  text?: string;
  /** A piece of the current assistant message (streamed deltas). */
  textDelta?: string;
  /** The assistant message in progress ended (a tool call or a new turn follows). */
  endTurn?: boolean;
  tools?: ToolCall[];
  /** Tool results that tell the CLI refused a call (by the call's id). */
  refused?: { id?: string; tool?: string; reason: string; input?: unknown }[];
  /** Usage to add; `total` replaces what was counted (a terminal event's totals). */
  usage?: { tokens: number; costUsd: number; total?: boolean };
  /** This is the terminal event. */
  terminal?: boolean;
  /** Human lines for the live view; undefined = none. */
  display?: string[];
}

export interface Judgement {
  success: boolean;
  error?: AgentRunReport["error"];
  /** The final message, when the terminal event carries it. */
  text?: string;
  /** The structured answer, when the CLI enforced a JSON Schema on it (it is not the final message then). */
  structured?: unknown;
}

export interface StreamPreset {
  /** The CLI's name, used in messages ("claude ended without …"). */
  name: string;
  decode(ev: Ev): Decoded | undefined;
  /** What a line of stderr means, if anything (only `refused` and `display` are read). */
  decodeStderr?(line: string): Decoded | undefined;
  /** The terminal event (undefined when none came) and what was accumulated. */
  judge(terminal: Ev | undefined, seen: StreamSummary): Judgement;
}

export interface StreamSummary {
  toolCalls: ToolCall[];
  denials: AgentRunReport["permissionDenials"];
  events: number;
  /** The CLI's exit code (null: a signal, or not known). */
  exitCode: number | null;
}

const MAX_CALLS = 500;
const MAX_COMMANDS = 50;
const MAX_TRANSCRIPT = 1024 * 1024;

export const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** One line of JSON, or undefined for anything else (stray output, a torn line). */
export function parseEventLine(line: string): Ev | undefined {
  const t = line.trim();
  if (t[0] !== "{") return undefined;
  try {
    const v = JSON.parse(t) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Ev) : undefined;
  } catch {
    return undefined;
  }
}

export function createStreamParser(preset: StreamPreset): StreamParser {
  let events = 0;
  let sessionId: string | undefined;
  let terminal: Ev | undefined;
  const turns: string[] = [];
  let current = "";
  let tokens = 0;
  let costUsd = 0;
  let lastLine: string | undefined;
  const toolCalls: ToolCall[] = [];
  const denials: AgentRunReport["permissionDenials"] = [];
  let transcriptLength = 0;
  const closeTurn = () => {
    if (current.trim() === "") return;
    if (transcriptLength < MAX_TRANSCRIPT) {
      turns.push(current);
      transcriptLength += current.length;
    } else turns[turns.length - 1] = current;
    current = "";
  };
  return {
    push(line): LineInfo | void {
      const ev = parseEventLine(line);
      if (!ev) return line.trim() ? { display: [line] } : { display: [] };
      events++;
      const d = preset.decode(ev);
      if (!d) return { display: [] };
      if (d.session) sessionId = d.session;
      if (d.textDelta !== undefined) current += d.textDelta;
      if (d.text !== undefined) {
        closeTurn();
        current = d.text;
        closeTurn();
      }
      if (d.endTurn) closeTurn();
      for (const call of d.tools ?? []) {
        closeTurn();
        if (toolCalls.length < MAX_CALLS) toolCalls.push(call);
      }
      for (const r of d.refused ?? []) {
        const call = r.id !== undefined ? toolCalls.find((c) => c.id === r.id) : undefined;
        if (call) call.refused = r.reason;
        denials.push({ tool: call?.tool ?? r.tool ?? "?", input: r.input ?? call?.input });
      }
      if (d.usage && !terminal) {
        if (d.usage.total) {
          tokens = d.usage.tokens || tokens;
          costUsd = d.usage.costUsd || costUsd;
        } else {
          tokens += d.usage.tokens;
          costUsd += d.usage.costUsd;
        }
      }
      const display = d.display ?? [];
      if (display.length) lastLine = display[display.length - 1];
      // the first terminal event decides: what a CLI prints after it (a killed session's extra turn) is not charged
      if (d.terminal && !terminal) {
        terminal = ev;
        return { display, terminal: true };
      }
      return { display };
    },
    pushStderr(line): LineInfo | void {
      const d = preset.decodeStderr?.(line);
      if (!d) return;
      for (const r of d.refused ?? []) denials.push({ tool: r.tool ?? "?", input: r.input ?? r.reason });
      return d.display ? { display: d.display } : undefined;
    },
    finish(_stdout, exitCode): AgentRunReport {
      closeTurn();
      const commands = toolCalls.filter((c) => c.command !== undefined && !c.refused).map((c) => c.command!.slice(0, 300)).slice(0, MAX_COMMANDS);
      const j = preset.judge(terminal, { toolCalls, denials, events, exitCode: exitCode ?? null });
      const text = j.text ?? turns[turns.length - 1] ?? "";
      const transcript = turns.join("\n\n---\n\n");
      return { text, success: j.success, error: j.error, tokens, costUsd, sessionId, permissionDenials: denials, commands, toolCalls, transcript, lastLine, events, terminal: terminal !== undefined, ...(j.structured !== undefined ? { structured: j.structured } : {}) };
    },
  };
}

/** A short display of a value: one line, at most `max` characters. */
export function brief(text: string, max = 160): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/**
 * An assistant message in content blocks (claude's stream-json, and Qwen Code's, which
 * follows it): its text and its tool calls, added to `d` with a display line each.
 */
export function decodeContentBlocks(d: Decoded, content: unknown, toolCall: (block: Ev) => ToolCall, describe: (call: ToolCall, input: Ev) => string): void {
  if (!Array.isArray(content)) return;
  d.display = [];
  d.tools = [];
  for (const c of content as Ev[]) {
    if (c?.type === "text" && typeof c.text === "string" && c.text.trim()) {
      d.textDelta = (d.textDelta ?? "") + c.text;
      d.display.push(...c.text.trim().split("\n").filter((l) => l.trim()).map((l) => brief(l, 200)));
    } else if (c?.type === "tool_use") {
      const call = toolCall(c);
      d.tools.push(call);
      d.display.push(`→ ${describe(call, (c.input ?? {}) as Ev)}`);
    }
  }
}

/**
 * The refusals a user message's tool results report, in content blocks: each failed result
 * whose text `refused` recognises is recorded against its call, with a display line made by `say`.
 */
export function toolResultRefusals(d: Decoded, content: unknown, refused: RegExp, say: (text: string) => string): void {
  if (!Array.isArray(content)) return;
  for (const c of content as Ev[]) {
    if (c?.type !== "tool_result" || c.is_error !== true) continue;
    const text = typeof c.content === "string" ? c.content : Array.isArray(c.content) ? (c.content as Ev[]).map((x) => str(x?.text) ?? "").join("") : "";
    if (!refused.test(text)) continue;
    (d.refused ??= []).push({ id: str(c.tool_use_id), reason: brief(text.split("\n")[0] ?? text, 200) });
    (d.display ??= []).push(`✗ refused: ${say(text)}`);
  }
}
