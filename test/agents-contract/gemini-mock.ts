/**
 * A loopback stand-in for the Gemini API that Gemini CLI talks to
 * (GOOGLE_GEMINI_BASE_URL): each POST …:streamGenerateContent?alt=sse is
 * answered, as SSE, by the next scripted turn (text, function calls), or by
 * an HTTP error, or not at all for a while. Requests are recorded.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type GeminiTurn =
  | { text: string }
  | { call: string; args: Record<string, unknown>; text?: string }
  | { status: number; message: string; reason?: string }
  | { hangMs: number };

export interface GeminiMock {
  url: string;
  requests: { url: string; body: Record<string, unknown> }[];
  /** The function names offered in the i-th request. */
  offered(i: number): string[];
  close(): Promise<void>;
}

const STATUS_NAMES: Record<number, string> = { 400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE" };

export function startGeminiMock(turns: GeminiTurn[]): Promise<GeminiMock> {
  const requests: { url: string; body: Record<string, unknown> }[] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.includes(":streamGenerateContent")) {
        res.writeHead(200, { "content-type": "application/json" }).end(req.url?.includes(":countTokens") ? '{"totalTokens":10}' : "{}");
        return;
      }
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(body || "{}") as Record<string, unknown>;
      } catch {
        // recorded as empty
      }
      requests.push({ url: req.url, body: parsed });
      const turn = turns[next++] ?? { text: "done" };
      if ("hangMs" in turn) {
        setTimeout(() => {
          if (!res.writableEnded) res.writeHead(200, { "content-type": "text/event-stream" }).end(sse({ text: "late" }));
        }, turn.hangMs);
        return;
      }
      if ("status" in turn) {
        const error = { code: turn.status, message: turn.message, status: STATUS_NAMES[turn.status] ?? "UNKNOWN", ...(turn.reason ? { details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: turn.reason, domain: "googleapis.com" }] } : {}) };
        res.writeHead(turn.status, { "content-type": "application/json" }).end(JSON.stringify({ error }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(sse(turn));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        offered: (i) => {
          const tools = (requests[i]?.body.tools ?? []) as { functionDeclarations?: { name: string }[] }[];
          return tools.flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
        },
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    }),
  );
}

function sse(turn: { text: string } | { call: string; args: Record<string, unknown>; text?: string }): string {
  const parts: Record<string, unknown>[] = [];
  if ("call" in turn) {
    if (turn.text) parts.push({ text: turn.text });
    parts.push({ functionCall: { name: turn.call, args: turn.args } });
  } else parts.push({ text: turn.text });
  const chunk = { candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 } };
  return `data: ${JSON.stringify(chunk)}\r\n\r\n`;
}
