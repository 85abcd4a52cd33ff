/**
 * Who may use the page. Pure: the server hands it a request's headers and
 * acts on the verdict.
 *
 * - The token: in the address printed at start (`?token=`), then in a cookie
 *   set on that first visit (HttpOnly, SameSite=Strict), or as
 *   `Authorization: Bearer` for scripts. Nothing is served without it.
 * - The `Host` header must name the address the server listens on (or
 *   `localhost` with its port): a page of another site that a DNS trick points
 *   at 127.0.0.1 sends its own name and is refused.
 * - A request that changes anything (POST) must also come from the page's own
 *   origin and carry JSON, which a form of another site cannot send.
 */

export interface GuardConfig {
  token: string;
  /** The `Host` values accepted (`127.0.0.1:PORT`, `localhost:PORT`, …). */
  hosts: ReadonlySet<string>;
  cookieName: string;
}

export type Verdict =
  | { ok: true; /** The token came in the address: set the cookie and send the browser to the same address without it. */ fromQuery: boolean }
  | { ok: false; status: 401 | 403 | 421; message: string };

export interface RequestFacts {
  method: string;
  /** The path and query, as sent. */
  url: string;
  host: string | undefined;
  origin: string | undefined;
  cookie: string | undefined;
  authorization: string | undefined;
  contentType: string | undefined;
}

/**
 * The `Host` values that name this server: its address and `localhost`, with
 * its port. Listening on every interface (`0.0.0.0`, `::`), each of the
 * machine's own addresses names it (`interfaces`); a name never does, as a
 * rebinding name is as good as any other.
 */
export function allowedHosts(address: string, port: number, interfaces: readonly string[] = []): Set<string> {
  const hosts = new Set<string>();
  const add = (a: string) => hosts.add(`${a.includes(":") ? `[${a.toLowerCase()}]` : a.toLowerCase()}:${port}`);
  add(address);
  const any = address === "0.0.0.0" || address === "::";
  if (any) for (const a of interfaces) add(a);
  if (any || address === "127.0.0.1" || address === "::1" || address === "localhost") {
    hosts.add(`localhost:${port}`);
    add("127.0.0.1");
  }
  return hosts;
}

/** Compares in time that does not depend on where the strings differ. */
export function sameSecret(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function queryToken(url: string): string | undefined {
  const q = url.indexOf("?");
  if (q < 0) return undefined;
  return new URLSearchParams(url.slice(q + 1)).get("token") ?? undefined;
}

export function judgeRequest(config: GuardConfig, req: RequestFacts): Verdict {
  if (req.host === undefined || !config.hosts.has(req.host.toLowerCase())) {
    return { ok: false, status: 421, message: "this server answers only to its own address (Host header refused)" };
  }
  const bearer = req.authorization?.startsWith("Bearer ") ? req.authorization.slice(7).trim() : undefined;
  const cookie = cookieValue(req.cookie, config.cookieName);
  const query = queryToken(req.url);
  const byQuery = query !== undefined && sameSecret(query, config.token);
  const authorized = byQuery || (cookie !== undefined && sameSecret(cookie, config.token)) || (bearer !== undefined && sameSecret(bearer, config.token));
  if (!authorized) return { ok: false, status: 401, message: "open the address `phaseloop ui` printed: it carries the token" };
  if (req.method !== "GET" && req.method !== "HEAD") {
    if (req.origin === undefined || !config.hosts.has(originHost(req.origin))) return { ok: false, status: 403, message: "a request that changes a run must come from the page itself (Origin refused)" };
    if (!(req.contentType ?? "").toLowerCase().startsWith("application/json")) return { ok: false, status: 403, message: "a request that changes a run must send JSON" };
  }
  return { ok: true, fromQuery: byQuery && req.method === "GET" };
}

/** `http://127.0.0.1:PORT` → `127.0.0.1:PORT`; anything else → "" (never a host we answer to). */
function originHost(origin: string): string {
  const m = /^http:\/\/([^/]+)$/.exec(origin.trim().toLowerCase());
  return m?.[1] ?? "";
}

/** The address without its `token` parameter (where the browser is sent once the cookie is set). */
export function withoutToken(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  params.delete("token");
  const rest = params.toString();
  return `${url.slice(0, q)}${rest ? `?${rest}` : ""}`;
}
