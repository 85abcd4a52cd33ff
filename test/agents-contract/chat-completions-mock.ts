/**
 * A loopback stand-in for an OpenAI-compatible chat-completions API, the
 * endpoint opencode and Qwen Code are pointed at: each POST …/chat/completions
 * is answered by the next scripted turn (text, tool calls), as SSE when the
 * request streams and as one JSON body when it does not, with usage counted;
 * or by an HTTP error; or not at all for a while. A request the script did not
 * foresee (a title, a summary) that offers no tools gets a short text and does
 * not use up a turn. Requests are recorded; GET …/models lists the model.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type ChatTurn =
  | { text: string }
  /** One tool call (or several, `calls`), with optional text before them. */
  | { call: string; args: Record<string, unknown>; text?: string }
  | { calls: { name: string; args: Record<string, unknown> }[]; text?: string }
  /** An HTTP error in the API's shape; `headers` as the API sends them (`retry-after-ms` on a 429). */
  | { status: number; message: string; type?: string; code?: string; headers?: Record<string, string> }
  | { hangMs: number };

export interface ChatRequest {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface ChatMock {
  /** The base URL, ending in /v1. */
  url: string;
  /** The chat-completions requests that took a scripted turn. */
  requests: ChatRequest[];
  /** Every request, scripted or not (titles, model lists). */
  all: ChatRequest[];
  /** The tool names offered in the i-th scripted request. */
  offered(i: number): string[];
  /** Script the turns from here on (for a script that needs what the mock's URL went into). */
  script(turns: ChatTurn[]): void;
  close(): Promise<void>;
}

export const MOCK_USAGE = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

export function startChatMock(initial: ChatTurn[], opts: { model?: string } = {}): Promise<ChatMock> {
  const requests: ChatRequest[] = [];
  const all: ChatRequest[] = [];
  const model = opts.model ?? "mock-model";
  let turns = initial;
  let next = 0;
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw || "{}") as Record<string, unknown>;
      } catch {
        // recorded as empty
      }
      const request = { url: req.url ?? "", headers: req.headers, body };
      all.push(request);
      if (req.method === "GET" && /\/models\/?$/.test(request.url)) {
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [{ id: model, object: "model", owned_by: "mock" }] }));
        return;
      }
      if (req.method !== "POST" || !request.url.includes("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
        return;
      }
      const tools = Array.isArray(body.tools) ? body.tools : [];
      // a side request (a session title, a summary) offers no tools: it does not take a turn
      if (tools.length === 0) {
        respond(res, body, { text: "Side answer" }, `side_${all.length}`, model);
        return;
      }
      requests.push(request);
      const n = next++;
      const turn = turns[n] ?? { text: "done" };
      if ("hangMs" in turn) {
        setTimeout(() => {
          if (!res.writableEnded) respond(res, body, { text: "late" }, `chatcmpl_${n}`, model);
        }, turn.hangMs);
        return;
      }
      if ("status" in turn) {
        const error = { message: turn.message, type: turn.type ?? (turn.status === 429 ? "rate_limit_error" : turn.status >= 500 ? "server_error" : "invalid_request_error"), code: turn.code ?? null, param: null };
        res.writeHead(turn.status, { "content-type": "application/json", ...turn.headers }).end(JSON.stringify({ error }));
        return;
      }
      respond(res, body, turn, `chatcmpl_${n}`, model);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        requests,
        all,
        script: (t) => {
          turns = t;
          next = 0;
        },
        offered: (i) => ((requests[i]?.body.tools ?? []) as { function?: { name?: string } }[]).map((t) => t.function?.name ?? "?"),
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    }),
  );
}

type Answer = Exclude<ChatTurn, { status: number } | { hangMs: number }>;

function callsOf(turn: Answer): { name: string; args: Record<string, unknown> }[] {
  if ("calls" in turn) return turn.calls;
  if ("call" in turn) return [{ name: turn.call, args: turn.args }];
  return [];
}

function respond(res: http.ServerResponse, body: Record<string, unknown>, turn: Answer, id: string, model: string): void {
  const text = "text" in turn ? turn.text : undefined;
  const calls = callsOf(turn).map((c, i) => ({ id: `call_${id}_${i}`, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }));
  const finish = calls.length > 0 ? "tool_calls" : "stop";
  const created = Math.floor(Date.now() / 1000);
  if (body.stream !== true) {
    const message = { role: "assistant", content: text ?? null, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: finish }], usage: MOCK_USAGE }));
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`);
  chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
  if (text) {
    // in two pieces, as a model streams
    const half = Math.ceil(text.length / 2);
    chunk([{ index: 0, delta: { content: text.slice(0, half) }, finish_reason: null }]);
    if (text.length > half) chunk([{ index: 0, delta: { content: text.slice(half) }, finish_reason: null }]);
  }
  calls.forEach((c, index) => {
    const args = c.function.arguments;
    const half = Math.ceil(args.length / 2);
    chunk([{ index: 0, delta: { tool_calls: [{ index, id: c.id, type: "function", function: { name: c.function.name, arguments: args.slice(0, half) } }] }, finish_reason: null }]);
    chunk([{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, finish_reason: null }]);
  });
  chunk([{ index: 0, delta: {}, finish_reason: finish }]);
  // the usage chunk, as stream_options.include_usage asks (sent always: some clients read it without asking)
  chunk([], { usage: MOCK_USAGE });
  res.end("data: [DONE]\n\n");
}
