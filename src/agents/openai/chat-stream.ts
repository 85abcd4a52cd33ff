/**
 * A streamed chat completion (`stream: true`, server-sent events) put back
 * together: content deltas joined, tool call fragments joined by their
 * `index`, usage from the final chunk. Fed text in chunks of any size; pure.
 */
export interface StreamedToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface StreamedMessage {
  role: "assistant";
  content: string | null;
  tool_calls?: StreamedToolCall[];
}

export interface StreamUsage {
  total_tokens?: number;
  prompt_tokens?: number;
  completion_tokens?: number;
}

interface Delta {
  content?: string | null;
  tool_calls?: { index?: number; id?: string; function?: { name?: string; arguments?: string } }[];
}

export class ChatStream {
  /** The [DONE] line or a finish_reason was seen. */
  finished = false;
  usage: StreamUsage | undefined;
  /** An error the server sent inside the stream. */
  error: string | undefined;
  private content = "";
  private sawContent = false;
  private readonly calls = new Map<number, { id?: string; name: string; arguments: string }>();
  private buffer = "";
  private line = "";
  private readonly onLine: (line: string) => void;

  /** `onLine` gets each complete line of the content as it arrives. */
  constructor(onLine: (line: string) => void = () => {}) {
    this.onLine = onLine;
  }

  push(text: string): void {
    // scanned with an index and cut once: cutting the rest off after every line would copy a
    // chunk of many short events once per event, quadratic in the chunk's size
    const buffer = this.buffer + text;
    let from = 0;
    let nl: number;
    while ((nl = buffer.indexOf("\n", from)) >= 0) {
      this.event(buffer.slice(from, nl).replace(/\r$/, ""));
      from = nl + 1;
    }
    this.buffer = from === 0 ? buffer : buffer.slice(from);
  }

  /** The end of the body: a last line without a newline, and the unfinished content line. */
  end(): void {
    if (this.buffer) this.event(this.buffer.replace(/\r$/, ""));
    this.buffer = "";
    if (this.line) this.onLine(this.line);
    this.line = "";
  }

  message(): StreamedMessage {
    const calls = [...this.calls.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([i, c]) => ({ id: c.id ?? `call_${i}`, type: "function" as const, function: { name: c.name, arguments: c.arguments } }));
    return { role: "assistant", content: this.sawContent ? this.content : null, ...(calls.length ? { tool_calls: calls } : {}) };
  }

  private event(line: string): void {
    if (!line.startsWith("data:")) return; // comments, event names, ids, blank separators
    const data = line.slice(5).trim();
    if (data === "[DONE]") {
      this.finished = true;
      return;
    }
    let chunk: { choices?: { delta?: Delta; finish_reason?: string | null }[]; usage?: StreamUsage | null; error?: { message?: string } | string };
    try {
      chunk = JSON.parse(data);
    } catch {
      return; // a garbled event is skipped, not fatal
    }
    if (typeof chunk !== "object" || chunk === null) return;
    if (chunk.error) this.error = typeof chunk.error === "string" ? chunk.error : (chunk.error.message ?? "error in the stream");
    if (chunk.usage) this.usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!choice) return;
    if (choice.finish_reason) this.finished = true;
    const delta = choice.delta;
    if (!delta || typeof delta !== "object") return;
    if (typeof delta.content === "string") {
      this.sawContent = true;
      this.content += delta.content;
      const line = this.line + delta.content;
      let from = 0;
      let nl: number;
      while ((nl = line.indexOf("\n", from)) >= 0) {
        this.onLine(line.slice(from, nl));
        from = nl + 1;
      }
      this.line = from === 0 ? line : line.slice(from);
    }
    for (const fragment of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      if (!fragment || typeof fragment !== "object") continue;
      const index = typeof fragment.index === "number" ? fragment.index : this.calls.size;
      const call = this.calls.get(index) ?? { name: "", arguments: "" };
      if (fragment.id) call.id = fragment.id;
      // the name comes whole in one fragment (some servers repeat it in each), or in pieces
      const name = fragment.function?.name;
      if (typeof name === "string" && name) call.name = call.name === "" || name.startsWith(call.name) ? name : call.name + name;
      if (typeof fragment.function?.arguments === "string") call.arguments += fragment.function.arguments;
      this.calls.set(index, call);
    }
  }
}
