/**
 * A loopback stand-in for the OpenAI Responses API that Codex talks to
 * (a model provider in CODEX_HOME/config.toml): each POST /v1/responses is
 * answered, as SSE, by the next scripted turn (a message, a function call,
 * a custom tool call such as apply_patch), or by an HTTP error, or not at
 * all for a while. Requests are recorded.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type ResponsesTurn =
  | { text: string }
  /** A function call; `namespace` for a tool codex offers in a namespace (an MCP server's, `mcp__SERVER`). */
  | { call: string; args: Record<string, unknown>; text?: string; namespace?: string }
  | { custom: string; input: string }
  /** Output items as they are (a `tool_search_call`, say). */
  | { items: Record<string, unknown>[] }
  | { status: number; body: string }
  | { hangMs: number };

export interface ResponsesMock {
  url: string;
  requests: Record<string, unknown>[];
  /** The tool names offered in the i-th request. */
  offered(i: number): string[];
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
      try {
        requests.push(JSON.parse(body || "{}") as Record<string, unknown>);
      } catch {
        requests.push({});
      }
      const n = next++;
      const turn = turns[n] ?? { text: "done" };
      if ("hangMs" in turn) {
        setTimeout(() => {
          if (!res.writableEnded) sendTurn(res, n, { text: "late" });
        }, turn.hangMs);
        return;
      }
      if ("status" in turn) {
        res.writeHead(turn.status, { "content-type": "application/json" }).end(turn.body);
        return;
      }
      sendTurn(res, n, turn);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        offered: (i) => ((requests[i]?.tools ?? []) as { name?: string; type?: string }[]).map((t) => t.name ?? t.type ?? "?"),
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    }),
  );
}

function sendTurn(res: http.ServerResponse, n: number, turn: Exclude<ResponsesTurn, { status: number } | { hangMs: number }>): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  const send = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const id = `resp_${n}`;
  const items: Record<string, unknown>[] = [];
  const text = "text" in turn ? turn.text : undefined;
  if (text) items.push({ type: "message", id: `msg_${n}`, role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] });
  if ("call" in turn) items.push({ type: "function_call", id: `fc_${n}`, call_id: `call_${n}`, name: turn.call, ...(turn.namespace ? { namespace: turn.namespace } : {}), arguments: JSON.stringify(turn.args), status: "completed" });
  if ("items" in turn) items.push(...turn.items.map((item, i) => ({ id: `item_${n}_${i}`, status: "completed", ...item })));
  if ("custom" in turn) items.push({ type: "custom_tool_call", id: `ctc_${n}`, call_id: `call_${n}`, name: turn.custom, input: turn.input, status: "completed" });
  send("response.created", { response: { id, status: "in_progress" } });
  items.forEach((item, output_index) => {
    send("response.output_item.added", { output_index, item: { ...item, status: "in_progress" } });
    if (item.type === "message") send("response.output_text.delta", { output_index, content_index: 0, item_id: item.id, delta: text });
    send("response.output_item.done", { output_index, item });
  });
  send("response.completed", { response: { id, status: "completed", output: items, usage: { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 } } });
  res.end();
}

/** codex's config.toml naming `url` as its model provider, with codex's own retries off; `extra` goes above the provider table. */
export function codexConfigFor(url: string, extra = ""): string {
  return `model_provider = "mock"\n${extra}\n[model_providers.mock]\nname = "mock"\nbase_url = "${url}"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n`;
}
