/**
 * A loopback Anthropic Messages API for Claude Code: each POST /v1/messages
 * takes the next scripted turn and answers it as SSE (text and tool_use
 * blocks) or as an HTTP error. Requests are recorded.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export type Block = { text: string } | { tool: string; input: Record<string, unknown> };
export type Turn = { blocks: Block[]; stop?: "end_turn" | "tool_use" | "max_tokens" } | { status: number; type?: string; message?: string; delayMs?: number } | { hangMs: number };

export interface AnthropicMock {
  url: string;
  /** The JSON bodies of the POST /v1/messages requests, in order. */
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

/** `script(i, body)` answers the i-th request; past the script's end, a final "done" text. */
export async function startAnthropicMock(script: Turn[] | ((i: number, body: Record<string, unknown>) => Turn)): Promise<AnthropicMock> {
  const requests: Record<string, unknown>[] = [];
  const turnFor = (i: number, body: Record<string, unknown>): Turn => (typeof script === "function" ? script(i, body) : (script[i] ?? { blocks: [{ text: "done" }] }));
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString("utf8")));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.startsWith("/v1/messages") || req.url.startsWith("/v1/messages/count_tokens")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(req.url?.includes("count_tokens") ? '{"input_tokens":10}' : "{}");
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // recorded as empty
      }
      // a request without tools asks for a title or a summary: answered, not counted
      if (!Array.isArray(body.tools) || body.tools.length === 0) return sendTurn(res, { blocks: [{ text: "title" }] }, body);
      const turn = turnFor(requests.length, body);
      requests.push(body);
      if ("hangMs" in turn) {
        setTimeout(() => sendTurn(res, { blocks: [{ text: "late" }] }, body), turn.hangMs);
        return;
      }
      if ("status" in turn) {
        const send = () => {
          res.writeHead(turn.status, { "content-type": "application/json", "request-id": "req_mock" });
          res.end(JSON.stringify({ type: "error", error: { type: turn.type ?? "api_error", message: turn.message ?? `mock error ${turn.status}` } }));
        };
        if (turn.delayMs) setTimeout(send, turn.delayMs);
        else send();
        return;
      }
      sendTurn(res, turn, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let toolId = 0;

function sendTurn(res: ServerResponse, turn: { blocks: Block[]; stop?: string }, body: Record<string, unknown>): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const ev = (name: string, data: unknown) => res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  const model = typeof body.model === "string" ? body.model : "claude-sonnet-4-5";
  ev("message_start", { type: "message_start", message: { id: `msg_${++toolId}`, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 100, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } } });
  turn.blocks.forEach((b, index) => {
    if ("text" in b) {
      ev("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
      ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: b.text } });
    } else {
      ev("content_block_start", { type: "content_block_start", index, content_block: { type: "tool_use", id: `toolu_${String(++toolId).padStart(6, "0")}`, name: b.tool, input: {} } });
      ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) } });
    }
    ev("content_block_stop", { type: "content_block_stop", index });
  });
  const stop = turn.stop ?? (turn.blocks.some((b) => "tool" in b) ? "tool_use" : "end_turn");
  ev("message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } });
  ev("message_stop", { type: "message_stop" });
  res.end();
}
