/**
 * A loopback stand-in for the Gemini API that Gemini CLI talks to
 * (GOOGLE_GEMINI_BASE_URL): each POST …:streamGenerateContent?alt=sse is
 * answered, as SSE, by the next scripted turn.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type GeminiTurn = { text: string } | { call: string; args: Record<string, unknown> };

export interface GeminiMock {
  url: string;
  requests: { url: string; body: Record<string, unknown> }[];
  close(): Promise<void>;
}

export function startGeminiMock(turns: GeminiTurn[]): Promise<GeminiMock> {
  const requests: { url: string; body: Record<string, unknown> }[] = [];
  let next = 0;
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.includes(":streamGenerateContent")) {
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
        return;
      }
      requests.push({ url: req.url, body: JSON.parse(body || "{}") as Record<string, unknown> });
      const turn = turns[Math.min(next++, turns.length - 1)] ?? { text: "done" };
      const part = "call" in turn ? { functionCall: { name: turn.call, args: turn.args } } : { text: turn.text };
      const chunk = { candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }], usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 } };
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}
