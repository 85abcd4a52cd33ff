/**
 * A loopback stand-in for the OpenAI Responses API that Codex talks to
 * (a model provider in CODEX_HOME/config.toml): each POST /v1/responses is
 * answered, as SSE, by the next scripted turn, or by an HTTP error.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type ResponsesTurn = { text: string } | { status: number; body: string };

export interface ResponsesMock {
  url: string;
  requests: Record<string, unknown>[];
  close(): Promise<void>;
}

export function startResponsesMock(turns: ResponsesTurn[]): Promise<ResponsesMock> {
  const requests: Record<string, unknown>[] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.includes("/responses")) {
        res.writeHead(404).end();
        return;
      }
      requests.push(JSON.parse(body || "{}") as Record<string, unknown>);
      const n = next++;
      const turn = turns[Math.min(n, turns.length - 1)] ?? { text: "done" };
      if ("status" in turn) {
        res.writeHead(turn.status, { "content-type": "application/json" }).end(turn.body);
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      const id = `resp_${n}`;
      const item = { type: "message", id: `msg_${n}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: turn.text, annotations: [] }] };
      send("response.created", { response: { id, status: "in_progress" } });
      send("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } });
      send("response.output_text.delta", { output_index: 0, content_index: 0, item_id: item.id, delta: turn.text });
      send("response.output_item.done", { output_index: 0, item });
      send("response.completed", { response: { id, status: "completed", output: [item], usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } } });
      res.end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}
