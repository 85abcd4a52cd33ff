/**
 * What a sandboxed process's own errors say the sandbox refused it: writes that met a
 * read-only file system, reads of hidden secrets, connections the proxy turned away. Pure:
 * untrusted text in, refusals out ("write PATH", "read PATH", "connect HOST").
 */
import type { SandboxProfile } from "./compile-sandbox.ts";
import { isUnder, joinInside } from "./compile-sandbox.ts";

const READ_ONLY = /read-only file system|\bEROFS\b/i;
/** The `code: 'EROFS',` line of an error node prints: its message line names the path. */
const ERROR_CODE_LINE = /^\s*code: ['"]E[A-Z]+['"],?\s*$/;
/** A program that words a failed write without the OS's error (codex's patches: "Failed to write file PATH"). */
const FAILED_WRITE = /\bfailed to write (?:file )?(\/[^\s'"]+)/i;
const DENIED = /permission denied|\bEACCES\b|operation not permitted|\bEPERM\b/i;
/** A quoted path, or the path a shell or coreutils names before its colon. */
const QUOTED = /['"‘`]([^'"’`\n]+)['"’`]/g;
const SHELL_NAMED = /(?:cannot create|can't create|cannot open|can't open|cannot touch|cannot remove|cannot mkdir|cannot create directory|cannot create regular file|cannot move|failed to open|open|write|mkdir|touch|rm|cp|mv|tee|ln):?\s+['"‘]?([^\s'"’:]+)['"’]?:/i;
/** The token right before the error's own words: "… file .git/config: Read-only file system". */
const BEFORE_ERROR = /([^\s'"‘’:]+):\s*(?:read-only file system|permission denied|EROFS|EACCES)/i;
const LEADING = /^(?:[\w.-]+:\s+)?(?:\d+:\s+)?([^\s:'"]+):\s/;
/** A direct connection: inside the sandbox's network namespace nothing answers, loopback included. */
const DIRECT = /(?:ECONNREFUSED|ENETUNREACH|EHOSTUNREACH|Connection refused|Network is unreachable|Failed to connect to)[^\n]*?\b((?:\d{1,3}(?:\.\d{1,3}){3})|localhost|(?:[a-z0-9-]+\.)+[a-z]{2,})(?:(?: port |:)(\d+))?/i;
const PROXY_PORTS = new Set(["3128", "1080"]);
/**
 * A name that could not be looked up: a phase that may reach no host has no name server
 * either. As curl and git, ssh, node, python's urllib3 and wget say it.
 */
const UNRESOLVED = /(?:could not resolve host(?:name)?:?|getaddrinfo (?:EAI_AGAIN|ENOTFOUND|EAI_NONAME)|failed to resolve|unable to resolve host address)\s+['"‘`]?((?:[a-z0-9-]+\.)+[a-z]{2,}|localhost)\b(?![\w-])/i;
/**
 * What a client says of a proxy's refusal: the status 403 as HTTP clients word it (curl's
 * "response 403", undici's "(403)", "403 Forbidden"), or the proxy's own words. A bare "403"
 * inside an id or a count is not one.
 */
const PROXY_REFUSED = /(?:\b(?:response|status(?: code)?|HTTP\/[\d.]+|code)[:\s]+403\b|\(403\)|\b403 forbidden\b|\bforbidden\b|\bblocked by\b|\bdenied by\b|\bnot allowed\b|connection refused by proxy)[^\n]*?\b((?:[a-z0-9-]+\.)+[a-z]{2,}|\d{1,3}(?:\.\d{1,3}){3}|localhost)(:\d+)?(?![\w.-])/i;
/** A name that reads as a file ("notes.md", "src/app.ts") rather than a host, unless a port follows it. */
const FILE_NAMED = /\.(?:md|markdown|txt|json|jsonl|ya?ml|toml|lock|log|ts|tsx|mts|cts|js|jsx|mjs|cjs|py|rs|go|java|kt|rb|php|sh|bash|zsh|css|scss|html?|xml|csv|ini|cfg|conf|env|sql|swift|patch|diff|out|err|tmp|bak)$/i;

function hostNamed(name: string, port: string | undefined, line: string, at: number): boolean {
  if (port !== undefined) return true;
  // a path's last part ("docs/notes.md") or a file's name is not a host
  if (line[at - 1] === "/" || FILE_NAMED.test(name)) return false;
  return true;
}

function absolute(path: string, cwd: string): string | undefined {
  if (path.startsWith("/")) return joinInside("/", path.slice(1));
  if (path.startsWith("~")) return undefined;
  return joinInside("/", `${cwd}/${path}`.slice(1));
}

function pathsIn(line: string): string[] {
  const found: string[] = [];
  for (const m of line.matchAll(QUOTED)) if (m[1] && /[/.\w]/.test(m[1]) && !/\s/.test(m[1])) found.push(m[1]);
  const before = found.length === 0 ? BEFORE_ERROR.exec(line) : null;
  if (before?.[1] && /[/.]/.test(before[1])) found.push(before[1]);
  const named = found.length === 0 ? SHELL_NAMED.exec(line) : null;
  if (named?.[1]) found.push(named[1]);
  const lead = LEADING.exec(line);
  if (found.length === 0 && lead?.[1] && lead[1].includes("/")) found.push(lead[1]);
  return found;
}

function writable(path: string, profile: SandboxProfile): boolean {
  return profile.allowWrite.some((d) => isUnder(path, d)) && !profile.denyWrite.some((d) => isUnder(path, d));
}

/** A program's own sandbox that could not start inside phaseloop's (codex's bubblewrap, a nested namespace). */
const NESTED_SANDBOX = /error building bubblewrap command|bwrap: (?:No permissions to create new namespace|Creating new namespace failed|setting up uid map)|sandbox (?:denied|error):/i;

export function readRefusals(stderr: string, cwd: string, profile: SandboxProfile): string[] {
  const refused = new Set<string>();
  for (const line of stderr.split("\n")) {
    if (line.length > 4000 || ERROR_CODE_LINE.test(line)) continue;
    if (NESTED_SANDBOX.test(line)) {
      refused.add(`sandbox (a program's own sandbox could not start inside phaseloop's: ${line.trim().slice(0, 160)})`);
      continue;
    }
    if (READ_ONLY.test(line)) {
      const candidates = pathsIn(line).map((p) => absolute(p, cwd)).filter((p): p is string => p !== undefined);
      const path = candidates.find((p) => !writable(p, profile)) ?? candidates[0];
      refused.add(path !== undefined ? `write ${path}` : `write (${line.trim().slice(0, 200)})`);
      continue;
    }
    const failed = FAILED_WRITE.exec(line)?.[1];
    const unwritable = failed !== undefined ? absolute(failed, cwd) : undefined;
    if (unwritable !== undefined && !writable(unwritable, profile)) {
      refused.add(`write ${unwritable}`);
      continue;
    }
    const secret = profile.denyRead.find((s) => line.includes(s));
    if (secret !== undefined) {
      refused.add(`read ${secret}`);
      continue;
    }
    if (DENIED.test(line)) {
      const path = pathsIn(line).map((p) => absolute(p, cwd)).find((p) => p !== undefined && profile.denyWrite.some((d) => isUnder(p, d)));
      if (path !== undefined) refused.add(`write ${path}`);
      continue;
    }
    const direct = DIRECT.exec(line);
    if (direct?.[1] !== undefined && hostNamed(direct[1], direct[2], line, direct.index + direct[0].lastIndexOf(direct[1])) && !(/^(?:localhost|127\.0\.0\.1)$/i.test(direct[1]) && PROXY_PORTS.has(direct[2] ?? ""))) {
      refused.add(`connect ${direct[1].toLowerCase()}${direct[2] ? `:${direct[2]}` : ""}`);
      continue;
    }
    const unresolved = UNRESOLVED.exec(line);
    if (unresolved?.[1] !== undefined && hostNamed(unresolved[1], undefined, line, unresolved.index + unresolved[0].length - unresolved[1].length)) {
      const name = unresolved[1].toLowerCase();
      if (!profile.allowedHosts.some((h) => h === name || h.startsWith(`${name}:`))) refused.add(`connect ${name}`);
      continue;
    }
    const host = PROXY_REFUSED.exec(line);
    if (host?.[1] !== undefined && hostNamed(host[1], host[2], line, host.index + host[0].length - host[1].length - (host[2]?.length ?? 0))) {
      const name = `${host[1].toLowerCase()}${host[2] ?? ""}`;
      if (!profile.allowedHosts.includes(name) && !profile.allowedHosts.includes(host[1].toLowerCase())) refused.add(`connect ${name}`);
    }
  }
  return [...refused];
}

const WORTH_A_LOOK = /bubblewrap|bwrap|sandbox (?:denied|error)|read-only file system|EROFS|ECONNREFUSED|ENETUNREACH|Network is unreachable|Connection refused|Failed to connect|403|forbidden|blocked by|resolve|getaddrinfo|\/\./i;

/** The strings of a JSON value, each of its lines. */
function stringsOf(value: unknown, out: string[], depth = 0): void {
  if (depth > 20 || out.length > 10_000) return;
  if (typeof value === "string") out.push(...value.split("\n"));
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out, depth + 1);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) stringsOf(v, out, depth + 1);
}

/**
 * What an agent CLI's event stream (JSON lines) says the sandbox refused: its tools' results
 * carry the errors the sandboxed commands met. Lines that are not JSON are read as text.
 */
export function readStreamRefusals(stdout: string, cwd: string, profile: SandboxProfile): string[] {
  const found = new Set<string>();
  for (const line of stdout.split("\n")) {
    if (!WORTH_A_LOOK.test(line)) continue;
    let texts: string[];
    try {
      texts = [];
      stringsOf(JSON.parse(line), texts);
    } catch {
      texts = [line];
    }
    for (const r of readRefusals(texts.join("\n"), cwd, profile)) found.add(r);
  }
  return [...found];
}
