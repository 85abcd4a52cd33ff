/**
 * A loopback stand-in for the Anthropic Messages API that Claude Code talks
 * to (ANTHROPIC_BASE_URL): each POST /v1/messages is answered, as SSE, by the
 * next scripted turn; other requests get an empty JSON answer.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type Turn = { text: string } | { tool: string; input: Record<string, unknown> };

export interface AnthropicMock {
  url: string;
  /** The requests' bodies, in order. */
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

export function startAnthropicMock(turns: Turn[]): Promise<AnthropicMock> {
  const requests: Record<string, unknown>[] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.startsWith("/v1/messages") || req.url.includes("count_tokens")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
        return;
      }
      const json = JSON.parse(body || "{}") as Record<string, unknown>;
      requests.push(json);
      const turn = turns[Math.min(next++, turns.length - 1)] ?? { text: "done" };
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      send("message_start", { message: { id: `msg_${next}`, type: "message", role: "assistant", model: json.model, content: [], stop_reason: null, usage: { input_tokens: 10, output_tokens: 0 } } });
      if ("tool" in turn) {
        send("content_block_start", { index: 0, content_block: { type: "tool_use", id: `tu_${next}`, name: turn.tool, input: {} } });
        send("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(turn.input) } });
      } else {
        send("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
        send("content_block_delta", { index: 0, delta: { type: "text_delta", text: turn.text } });
      }
      send("content_block_stop", { index: 0 });
      send("message_delta", { delta: { stop_reason: "tool" in turn ? "tool_use" : "end_turn" }, usage: { output_tokens: 5 } });
      send("message_stop", {});
      res.end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}
