/** A minimal Language Server Protocol client over stdio, enough to open a file, ask for completion and read diagnostics. */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";

export const YAML_SERVER_VERSION = "2.0.0";
/** Where scripts/install-yaml-server.mjs puts the server. */
export const YAML_SERVER = join(process.env.PHASELOOP_TOOLS_CACHE ?? join(homedir(), ".cache/phaseloop-tools"), `yaml-language-server@${YAML_SERVER_VERSION}`, "node_modules/yaml-language-server/bin/yaml-language-server");
export const haveYamlServer = existsSync(YAML_SERVER);

export interface LspDiagnostic {
  message: string;
  severity?: number;
  range: { start: { line: number; character: number } };
}

type Json = Record<string, unknown>;

export class LspClient {
  private readonly child: ChildProcess;
  private buffer = Buffer.alloc(0);
  private nextId = 1;
  private readonly pending = new Map<number, (value: unknown) => void>();
  private readonly diagnostics = new Map<string, LspDiagnostic[]>();
  private readonly waiters: (() => void)[] = [];

  private readonly settings: Json;

  constructor(settings: Json = {}) {
    this.settings = settings;
    this.child = spawn("node", [YAML_SERVER, "--stdio"], { stdio: ["pipe", "pipe", "ignore"] });
    this.child.stdout!.on("data", (chunk: Buffer) => this.onData(chunk));
  }

  private send(message: Json): void {
    const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...message }), "utf8");
    this.child.stdin!.write(`Content-Length: ${body.length}\r\n\r\n`);
    this.child.stdin!.write(body);
  }

  private onData(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const headerEnd = this.buffer.indexOf("\r\n\r\n");
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(this.buffer.subarray(0, headerEnd).toString())?.[1]);
      if (this.buffer.length < headerEnd + 4 + length) return;
      const message = JSON.parse(this.buffer.subarray(headerEnd + 4, headerEnd + 4 + length).toString("utf8")) as Json;
      this.buffer = this.buffer.subarray(headerEnd + 4 + length);
      this.onMessage(message);
    }
  }

  private onMessage(m: Json): void {
    if (m.id !== undefined && m.method === undefined) {
      this.pending.get(m.id as number)?.(m.result);
      this.pending.delete(m.id as number);
      return;
    }
    if (m.method === "textDocument/publishDiagnostics") {
      const p = m.params as { uri: string; diagnostics: LspDiagnostic[] };
      this.diagnostics.set(p.uri, p.diagnostics);
      for (const w of this.waiters.splice(0)) w();
      return;
    }
    if (m.id !== undefined) {
      // a request from the server: its settings, or a capability to register
      const result = m.method === "workspace/configuration" ? ((m.params as { items: { section?: string }[] }).items.map((i) => (i.section === "yaml" ? this.settings : i.section ? null : { yaml: this.settings }))) : null;
      this.send({ id: m.id, result });
    }
  }

  request(method: string, params: unknown): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.send({ id, method, params });
    });
  }

  notify(method: string, params: unknown): void {
    this.send({ method, params });
  }

  async start(rootDir: string): Promise<void> {
    await this.request("initialize", { processId: process.pid, rootUri: pathToFileURL(rootDir).href, capabilities: { textDocument: { completion: { completionItem: { snippetSupport: false } } }, workspace: { configuration: true } } });
    this.notify("initialized", {});
    this.notify("workspace/didChangeConfiguration", { settings: { yaml: this.settings } });
  }

  open(file: string, text: string): string {
    const uri = pathToFileURL(file).href;
    this.diagnostics.delete(uri);
    this.notify("textDocument/didOpen", { textDocument: { uri, languageId: "yaml", version: 1, text } });
    return uri;
  }

  /** The diagnostics the server publishes for a file (waiting for the first publication). */
  async diagnosticsFor(uri: string, timeoutMs = 30_000): Promise<LspDiagnostic[]> {
    const until = Date.now() + timeoutMs;
    while (!this.diagnostics.has(uri)) {
      if (Date.now() > until) throw new Error(`no diagnostics published for ${uri}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
    return this.diagnostics.get(uri)!;
  }

  async completion(uri: string, line: number, character: number): Promise<string[]> {
    const result = (await this.request("textDocument/completion", { textDocument: { uri }, position: { line, character } })) as { items?: { label: string }[] } | { label: string }[] | null;
    const items = Array.isArray(result) ? result : (result?.items ?? []);
    return items.map((i) => i.label);
  }

  async hover(uri: string, line: number, character: number): Promise<string> {
    const result = (await this.request("textDocument/hover", { textDocument: { uri }, position: { line, character } })) as { contents?: { value?: string } | string } | null;
    const c = result?.contents;
    return typeof c === "string" ? c : (c?.value ?? "");
  }

  async stop(): Promise<void> {
    await Promise.race([this.request("shutdown", null), new Promise((r) => setTimeout(r, 2000))]);
    this.notify("exit", null);
    this.child.kill();
  }
}
