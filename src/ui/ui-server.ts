/**
 * The server behind `phaseloop ui`: node:http on loopback (Node and Deno
 * alike), every request judged by guard.ts first, the page's files and JSON
 * read from the run folders, a live feed (live-feed.ts), and the three
 * controls handed to the run controls the CLI uses.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";
import type { Host } from "../host/host.ts";
import type { ControlResult, RunControls } from "./controls.ts";
import { allowedHosts, judgeRequest, withoutToken, type GuardConfig } from "./guard.ts";
import { LiveFeed } from "./live-feed.ts";
import { LIVE_CSP, livePageHtml, loadPageAsset } from "./page-html.ts";
import { parseRunKey } from "./run-key.ts";
import { listRunRows, readPhaseFiles } from "./read-runs.ts";

export interface UiServerOptions {
  workdir: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: the OS picks. */
  port?: number;
  controls: RunControls;
  /** Default: 32 random bytes. */
  token?: string;
  /** Files, the clock and processes: the machine the workdir is on. */
  machine: Host;
}

export interface UiServer {
  /** The address to open, with the token. */
  url: string;
  origin: string;
  port: number;
  token: string;
  feed: LiveFeed;
  close(): Promise<void>;
}

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-resource-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-store",
};

const BODY_MAX = 64 * 1024;

export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token ?? randomBytes(32).toString("base64url");
  const feed = new LiveFeed(options.workdir, options.machine);
  let guard: GuardConfig | undefined;
  const server: Server = createServer((req, res) => {
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) res.setHeader(k, v);
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendText(res, 500, `internal error: ${error instanceof Error ? error.message : String(error)}`);
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const verdict = judgeRequest(guard!, {
      method: req.method ?? "GET",
      url: req.url ?? "/",
      host: req.headers.host,
      origin: header(req, "origin"),
      cookie: header(req, "cookie"),
      authorization: header(req, "authorization"),
      contentType: header(req, "content-type"),
    });
    if (!verdict.ok) return sendText(res, verdict.status, verdict.message);
    const url = new URL(req.url ?? "/", "http://localhost");
    const isPage = url.pathname === "/" || url.pathname.startsWith("/run/");
    if (verdict.fromQuery && isPage) {
      // the token goes into a cookie and out of the address bar (and of the history)
      res.setHeader("set-cookie", `${guard!.cookieName}=${token}; Path=/; HttpOnly; SameSite=Strict`);
      res.writeHead(303, { location: withoutToken(req.url ?? "/") });
      res.end();
      return;
    }
    const path = url.pathname;
    if (req.method === "POST") return control(req, res, path);
    if (req.method !== "GET" && req.method !== "HEAD") return sendText(res, 405, "method not allowed");
    if (path === "/" || path.startsWith("/run/")) {
      res.setHeader("content-security-policy", LIVE_CSP);
      return send(res, 200, "text/html; charset=utf-8", livePageHtml());
    }
    if (path === "/assets/page.js" || path === "/assets/page.css") {
      const asset = await loadPageAsset(options.machine.files);
      if (asset === undefined) return sendText(res, 500, "the page is not built: run `npm run build` in the phaseloop package");
      return path.endsWith(".js") ? send(res, 200, "text/javascript; charset=utf-8", asset.js) : send(res, 200, "text/css; charset=utf-8", asset.css);
    }
    if (path === "/api/runs") return sendJson(res, 200, await listRunRows(options.workdir, options.machine));
    if (path === "/api/phase") {
      const key = url.searchParams.get("key") ?? "";
      const files = await readPhaseFiles(options.workdir, key, url.searchParams.get("dir") ?? "", options.machine.files);
      return files === undefined ? sendText(res, 404, "no such phase run") : sendJson(res, 200, files);
    }
    if (path === "/api/stream") {
      const key = url.searchParams.get("key");
      if (key !== null && parseRunKey(key) === undefined) return sendText(res, 404, "no such run");
      return feed.subscribe(res, url.searchParams.get("list") === "1", key);
    }
    return sendText(res, 404, "not found");
  }

  async function control(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const body = await readBody(req);
    if (body === undefined) return sendText(res, 400, "the request must be a JSON object of at most 64 KiB");
    const key = typeof body.key === "string" ? body.key : "";
    const parts = parseRunKey(key);
    if (parts === undefined || parts.length !== 1) return sendJson(res, 400, { ok: false, message: "controls act on a run, not on one of its lanes or sub-pipelines" });
    const runId = parts[0]!;
    const c = options.controls;
    const reply = (r: ControlResult) => sendJson(res, r.ok ? 200 : 409, r);
    if (path === "/api/stop") return reply(await c.stopRun(runId));
    if (path === "/api/resume") return reply(await c.resumeRun(runId));
    if (path === "/api/answer") {
      if (typeof body.answer !== "string" || body.answer.trim() === "") return sendJson(res, 400, { ok: false, message: "the answer is empty" });
      return reply(await c.answerQuestion(runId, body.answer));
    }
    return sendText(res, 404, "not found");
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const interfaces = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
  guard = { token, hosts: allowedHosts(host, port, interfaces), cookieName: `phaseloop_ui_${port}` };
  const shown = host.includes(":") ? `[${host}]` : host;
  const origin = `http://${shown}:${port}`;
  return {
    url: `${origin}/?token=${token}`,
    origin,
    port,
    token,
    feed,
    close: () =>
      new Promise<void>((resolve) => {
        feed.close();
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.setHeader("content-security-policy", "default-src 'none'");
  send(res, status, "text/plain; charset=utf-8", `${text}\n`);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(value));
}

async function readBody(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > BODY_MAX) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    const value = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
