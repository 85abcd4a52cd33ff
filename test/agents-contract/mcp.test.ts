/**
 * MCP servers through the real, pinned agent CLIs: a stdio server written
 * with the SDK (test/fixtures/mcp/stamp-server.mjs) is declared once and
 * attached to a phase; the loopback model calls its tool through the CLI,
 * sees the result in its next request, and the server leaves a marker. A
 * tool outside the tool set's allowlist, or of a server the phase did not
 * attach, fails the phase as a policy_violation.
 */
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { agentBinDir } from "./agent-bins.ts";
import { claudeEnv as offlineClaudeEnv, codexEnv as offlineCodexEnv, geminiEnv as offlineGeminiEnv } from "./agent-envs.ts";
import { startAnthropicMock, type AnthropicMock, type Turn } from "./anthropic-mock.ts";
import { contractSuite, gitWorkdir, runPipeline, type RunOutcome } from "./contract-helpers.ts";
import { startFakeOpenAi, type ScriptedAnswer } from "../agents/fake-openai.ts";
import { startGeminiMock, type GeminiMock, type GeminiTurn } from "./gemini-mock.ts";
import { startResponsesMock, type ResponsesMock, type ResponsesTurn } from "./responses-mock.ts";
import { skipped } from "../skip-reason.ts";

const SERVER = resolve("test/fixtures/mcp/stamp-server.mjs");
const track = contractSuite();

interface McpSetup {
  preset: string;
  /** The servers the phase attaches. */
  attach: string[];
  /** The tool set's mcp allowlist; undefined: no tool set. */
  allow?: string[];
  /** The stamp server's extra env (STAMP_FAIL). */
  serverEnv?: Record<string, string>;
  agentExtra?: string;
  /** A streamable HTTP server declared as `web`. */
  httpUrl?: string;
  /** The pipeline's sandbox (default off; the stamp server then leaves no marker: it could not write one outside the workdir). */
  sandbox?: "auto";
}

/** A pipeline declaring two servers, `stamp` and `other`, both the stamp server with their own markers. */
function pipeline(s: McpSetup, markers: { stamp: string; other: string }): string {
  const env = (marker: string) => JSON.stringify({ STAMP_MARKER: s.sandbox ? "" : marker, TOKEN: "{{ env.STAMP_TOKEN }}", ...(s.serverEnv ?? {}) });
  return `phaseloop: 1
name: contract-mcp
sandbox: ${s.sandbox ?? "off"}
mcp:
  stamp: { command: [node, ${JSON.stringify(SERVER)}], env: ${env(markers.stamp)} }
  other: { command: [node, ${JSON.stringify(SERVER)}], env: ${env(markers.other)} }
${s.httpUrl ? `  web: { url: "${s.httpUrl}", headers: { Authorization: "Bearer {{ env.STAMP_TOKEN }}" } }\n` : ""}agents:
  a: { preset: ${s.preset}${s.agentExtra ?? ""} }
${s.allow ? `tools:\n  t: { read: ["**"], mcp: ${JSON.stringify(s.allow)} }\n` : ""}phases:
  work:
    agent: a
    mcp: ${JSON.stringify(s.attach)}
${s.allow ? "    tools: t\n" : ""}    prompt: "Stamp hello."
    retry: { max_attempts: 1 }
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`;
}

interface McpOutcome extends RunOutcome {
  dir: string;
  markers: { stamp: string; other: string };
}

async function runMcp(s: McpSetup, env: Record<string, string>, files: Record<string, string> = {}): Promise<McpOutcome> {
  const outside = mkdtempSync(join(tmpdir(), "phaseloop-mcp-marker-"));
  const markers = { stamp: join(outside, "stamp.log"), other: join(outside, "other.log") };
  const { dir } = gitWorkdir(`phaseloop-mcp-${s.preset}-`, { "p.yaml": pipeline(s, markers), "src/a.ts": "export const a = 1;\n", ...files });
  // the servers' markers are written outside the workdir: the pipeline's own mode, whatever the suites run with
  const o = await runPipeline(dir, { STAMP_TOKEN: "tok-42", ...env }, ["--sandbox", s.sandbox ?? "off"]);
  return { ...o, dir, markers };
}

/** The stamp server over streamable HTTP on loopback, in its own process. */
async function startHttpStamp(): Promise<{ url: string; marker: string }> {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-mcp-http-"));
  const child = spawn("node", [resolve("test/fixtures/mcp/stamp-http-server.mjs"), join(dir, "port"), join(dir, "calls.log")], { stdio: "ignore" });
  track({ close: async () => void child.kill() });
  for (let i = 0; i < 400 && !existsSync(join(dir, "port")); i++) await new Promise((r) => setTimeout(r, 25));
  return { url: `http://127.0.0.1:${readFileSync(join(dir, "port"), "utf8").trim()}/mcp`, marker: join(dir, "calls.log") };
}

const read = (file: string) => (existsSync(file) ? readFileSync(file, "utf8") : "");

// ── Claude Code ──────────────────────────────────────────────────────────────

const claudeBin = agentBinDir("@anthropic-ai/claude-code");

/** The offline claude, with a server of the user's own that must not start. */
function claudeEnv(apiUrl: string): Record<string, string> {
  const home = mkdtempSync(join(tmpdir(), "phaseloop-claude-home-"));
  return offlineClaudeEnv(claudeBin, apiUrl, { home, claudeJson: { mcpServers: { sneaky: { type: "stdio", command: "node", args: [SERVER], env: { STAMP_MARKER: join(home, "sneaky.log") } } } } });
}

const claudeMock = async (turns: Turn[]): Promise<AnthropicMock> => track(await startAnthropicMock(turns));

const toolNamesOf = (body: Record<string, unknown>) => ((body.tools as { name: string }[] | undefined) ?? []).map((t) => t.name);
const REPO_MCP = JSON.stringify({ mcpServers: { repo: { command: "node", args: [SERVER] } } });

describe.skipIf(skipped(claudeBin === undefined, "the claude CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("claude with MCP servers", () => {
  it("calls the attached server's allowed tool; the result reaches the model; nothing else is loaded", async () => {
    const mock = await claudeMock([{ blocks: [{ tool: "mcp__stamp__stamp", input: { text: "hello" } }] }, { blocks: [{ text: "Stamped." }] }]);
    const r = await runMcp({ preset: "claude", attach: ["stamp"], allow: ["stamp/stamp"] }, claudeEnv(mock.url), { ".mcp.json": REPO_MCP });
    expect(r.finished.status, r.stdout + r.stderr).toBe("succeeded");
    expect(read(r.markers.stamp)).toContain('called stamp {"text":"hello"} token=tok-42');
    expect(read(r.markers.other)).toBe("");
    const tools = toolNamesOf(mock.requests[0]!);
    expect(tools).toContain("mcp__stamp__stamp");
    // claude offers every tool of an attached server (its permission rules refuse those not allowed), and no other server's
    expect(tools.filter((t) => t.startsWith("mcp__") && !t.startsWith("mcp__stamp__"))).toEqual([]);
    expect(JSON.stringify(mock.requests[1]!.messages)).toContain("stamped: hello");
    expect(r.leftovers).toEqual([]);
  }, 120_000);

  it("a tool outside the allowlist is a policy_violation", async () => {
    const mock = await claudeMock([{ blocks: [{ tool: "mcp__stamp__erase", input: {} }] }, { blocks: [{ text: "Erased." }] }]);
    const r = await runMcp({ preset: "claude", attach: ["stamp"], allow: ["stamp/stamp"] }, claudeEnv(mock.url));
    expect(r.finished.status).toBe("failed");
    expect(r.finished.error).toBe("policy_violation");
    expect(read(r.markers.stamp)).not.toContain("called erase");
  }, 120_000);

  it("a tool of a server the phase did not attach is a policy_violation; that server never starts", async () => {
    const mock = await claudeMock([{ blocks: [{ tool: "mcp__other__stamp", input: { text: "x" } }] }, { blocks: [{ text: "Done." }] }]);
    const r = await runMcp({ preset: "claude", attach: ["stamp"], allow: ["stamp/stamp", "other/stamp"] }, claudeEnv(mock.url));
    expect(r.finished.error).toBe("policy_violation");
    expect(String(r.finished.message)).toMatch(/not attached/);
    expect(read(r.markers.other)).toBe("");
  }, 120_000);

  it("reaches a streamable HTTP server from inside the OS sandbox (its host is let through)", async () => {
    const web = await startHttpStamp();
    const mock = await claudeMock([{ blocks: [{ tool: "mcp__web__stamp", input: { text: "remote" } }] }, { blocks: [{ text: "Stamped." }] }]);
    const r = await runMcp({ preset: "claude", attach: ["web"], allow: ["web/stamp"], httpUrl: web.url, sandbox: "auto" }, claudeEnv(mock.url));
    expect(r.finished.status, r.stdout + r.stderr).toBe("succeeded");
    expect(read(web.marker)).toContain('called stamp {"text":"remote"} auth=Bearer tok-42');
    expect(JSON.stringify(mock.requests[1]!.messages)).toContain("stamped over http: remote");
    const started = r.events.find((e) => e.type === "phase.started");
    expect(started?.sandbox).toBe(true);
  }, 120_000);

  it("a server that fails to start fails the phase", async () => {
    const mock = await claudeMock([{ blocks: [{ text: "Nothing to stamp with." }] }]);
    const r = await runMcp({ preset: "claude", attach: ["stamp"], allow: ["stamp/stamp"], serverEnv: { STAMP_FAIL: "cannot open the stamp pad" } }, claudeEnv(mock.url));
    expect(r.finished.status).toBe("failed");
    expect(String(r.finished.message)).toMatch(/MCP server "stamp"/);
  }, 120_000);
});

// ── the built-in agent, an MCP client through the SDK ────────────────────────

describe("the built-in openai agent with MCP servers", () => {
  const openai = async (script: ScriptedAnswer[]) => {
    const s = await startFakeOpenAi(script);
    track({ close: async () => s.stop() });
    return s;
  };
  const extra = (base: string) => `, model: m, base_url: "${base}"`;

  it("offers the allowed tools of the attached server as functions, calls them, sends the result back", async () => {
    const s = await openai([{ tool_calls: [{ name: "mcp__stamp__stamp", arguments: { text: "hello" } }] }, { content: "Stamped." }]);
    const r = await runMcp({ preset: "openai", attach: ["stamp"], allow: ["stamp/stamp"], agentExtra: extra(s.base) }, {});
    expect(r.finished.status, r.stdout + r.stderr).toBe("succeeded");
    const first = s.requests()[0]!.body;
    expect((first.tools ?? []).map((t) => t.function.name).filter((n) => n.startsWith("mcp__"))).toEqual(["mcp__stamp__stamp"]);
    expect(JSON.stringify(s.requests()[1]!.body.messages)).toContain("stamped: hello");
    expect(read(r.markers.stamp)).toContain('called stamp {"text":"hello"} token=tok-42');
    expect(read(r.markers.other)).toBe("");
    expect(r.leftovers).toEqual([]);
  }, 60_000);

  it("a call of a tool outside the allowlist or of an unattached server is refused: policy_violation", async () => {
    const s = await openai([{ tool_calls: [{ name: "mcp__stamp__erase", arguments: {} }, { name: "mcp__other__stamp", arguments: { text: "x" } }] }, { content: "Done." }]);
    const r = await runMcp({ preset: "openai", attach: ["stamp"], allow: ["stamp/stamp", "other/stamp"], agentExtra: extra(s.base) }, {});
    expect(r.finished.error).toBe("policy_violation");
    expect(read(r.markers.stamp)).not.toContain("called erase");
    expect(read(r.markers.other)).toBe("");
  }, 60_000);

  it("in the OS sandbox too", async () => {
    const s = await openai([{ tool_calls: [{ name: "mcp__stamp__stamp", arguments: { text: "fenced" } }] }, { content: "Stamped." }]);
    const r = await runMcp({ preset: "openai", attach: ["stamp"], allow: ["stamp/*"], agentExtra: extra(s.base), sandbox: "auto" }, {});
    expect(r.finished.status, r.stdout + r.stderr).toBe("succeeded");
    expect(JSON.stringify(s.requests()[1]!.body.messages)).toContain("stamped: fenced");
    expect(r.leftovers).toEqual([]);
  }, 60_000);

  it("connects to a streamable HTTP server with its templated headers", async () => {
    const web = await startHttpStamp();
    const s = await openai([{ tool_calls: [{ name: "mcp__web__stamp", arguments: { text: "remote" } }] }, { content: "Stamped." }]);
    const r = await runMcp({ preset: "openai", attach: ["web"], allow: ["web/stamp"], agentExtra: extra(s.base), httpUrl: web.url }, {});
    expect(r.finished.status, r.stdout + r.stderr).toBe("succeeded");
    expect(read(web.marker)).toContain('called stamp {"text":"remote"} auth=Bearer tok-42');
    expect(JSON.stringify(s.requests()[1]!.body.messages)).toContain("stamped over http: remote");
  }, 60_000);

  it("a server that fails to start fails the phase with its own message", async () => {
    const s = await openai([{ content: "unused" }]);
    const r = await runMcp({ preset: "openai", attach: ["stamp"], agentExtra: extra(s.base), serverEnv: { STAMP_FAIL: "cannot open the stamp pad" } }, {});
    expect(r.finished.status).toBe("failed");
    expect(String(r.finished.message)).toContain('MCP server "stamp" failed to start: stamp server: cannot open the stamp pad');
    expect(s.requests()).toEqual([]);
  }, 60_000);
});

// ── Gemini CLI ───────────────────────────────────────────────────────────────

const geminiBin = agentBinDir("@google/gemini-cli");

/** A private HOME whose settings choose API-key auth and declare a server of the user's own, which must not start. */
function geminiEnv(apiUrl: string): Record<string, string> {
  return offlineGeminiEnv(geminiBin, apiUrl, { settings: { mcpServers: { sneaky: { command: "node", args: [SERVER] } } } });
}

const geminiMock = async (turns: GeminiTurn[]): Promise<GeminiMock> => track(await startGeminiMock(turns));

const GEMINI_REPO_SETTINGS = JSON.stringify({ mcpServers: { repo: { command: "node", args: [SERVER] } } });

describe.skipIf(skipped(geminiBin === undefined, "the gemini CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("gemini with MCP servers", { timeout: 150_000 }, () => {
  it("calls the attached server's allowed tool; the result reaches the model; nothing else is loaded", async () => {
    const mock = await geminiMock([{ call: "mcp_stamp_stamp", args: { text: "hello" } }, { text: "Stamped." }]);
    const r = await runMcp({ preset: "gemini", attach: ["stamp"], allow: ["stamp/stamp"], agentExtra: ", model: gemini-2.5-flash" }, geminiEnv(mock.url), { ".gemini/settings.json": GEMINI_REPO_SETTINGS });
    const offered = mock.offered(0);
    expect(r.finished.status, `${r.stdout}${r.stderr}\noffered: ${offered.join(",")}`).toBe("succeeded");
    expect(offered.filter((t) => /stamp|erase|sneaky|repo/.test(t))).toEqual(["mcp_stamp_stamp"]);
    expect(read(r.markers.stamp)).toContain('called stamp {"text":"hello"} token=tok-42');
    expect(read(r.markers.other)).toBe("");
    expect(JSON.stringify(mock.requests[1]!.body)).toContain("stamped: hello");
    expect(r.leftovers).toEqual([]);
  });

  it("a tool outside the allowlist, or of a server the phase did not attach, is a policy_violation", async () => {
    for (const call of ["mcp_stamp_erase", "mcp_other_stamp"]) {
      const mock = await geminiMock([{ call, args: { text: "x" } }, { text: "Done." }]);
      const r = await runMcp({ preset: "gemini", attach: ["stamp"], allow: ["stamp/stamp", "other/stamp"], agentExtra: ", model: gemini-2.5-flash" }, geminiEnv(mock.url));
      expect(r.finished.error, call).toBe("policy_violation");
      expect(read(r.markers.stamp)).not.toContain("called erase");
      expect(read(r.markers.other)).toBe("");
    }
  });

  it("a server that fails to start fails the phase", async () => {
    const mock = await geminiMock([{ text: "Nothing to stamp with." }]);
    const r = await runMcp({ preset: "gemini", attach: ["stamp"], allow: ["stamp/stamp"], agentExtra: ", model: gemini-2.5-flash", serverEnv: { STAMP_FAIL: "cannot open the stamp pad" } }, geminiEnv(mock.url));
    expect(r.finished.status).toBe("failed");
    expect(String(r.finished.message)).toMatch(/an MCP server of the phase failed to start: gemini says only "MCP issues detected/);
  });
});

// ── Codex CLI ────────────────────────────────────────────────────────────────

const codexBin = agentBinDir("@openai/codex");
// the names codex gives MCP tools in its requests to the model
// A model slug codex has no metadata for: codex then offers MCP tools as functions up front. For the
// models it knows (gpt-5.5) it defers them behind its `tool_search` tool, which this mock does not speak.
const CODEX_MODEL = ", model: gpt-5.5";
/** codex defers MCP tools behind `tool_search`: the model searches first, then calls what it found. */
const SEARCH: ResponsesTurn = { items: [{ type: "tool_search_call", call_id: "search_1", execution: "client", arguments: { query: "stamp", limit: 8 } }] };
const CODEX_STAMP = { call: "stamp", namespace: "mcp__stamp" };
const CODEX_ERASE = { call: "erase", namespace: "mcp__stamp" };
const CODEX_OTHER = { call: "stamp", namespace: "mcp__other" };

/** The offline codex, with a server of the user's own in its config.toml. */
function codexEnv(apiUrl: string, sneakyMarker: string): Record<string, string> {
  const sneaky = `[mcp_servers.sneaky]\ncommand = "node"\nargs = [${JSON.stringify(SERVER)}]\nenv = { STAMP_MARKER = ${JSON.stringify(sneakyMarker)} }\n`;
  return offlineCodexEnv(codexBin, apiUrl, { userConfig: sneaky });
}

const responsesMock = async (turns: ResponsesTurn[]): Promise<ResponsesMock> => track(await startResponsesMock(turns));

describe.skipIf(skipped(codexBin === undefined, "the codex CLI is not installed (npm run test:agents installs the pinned agent CLIs)"))("codex with MCP servers", { timeout: 150_000 }, () => {
  const sneaky = () => join(mkdtempSync(join(tmpdir(), "phaseloop-sneaky-")), "sneaky.log");

  it("calls the attached server's allowed tool; the result reaches the model; the user's own server does not start", async () => {
    const mock = await responsesMock([SEARCH, { ...CODEX_STAMP, args: { text: "hello" } }, { text: "Stamped." }]);
    const marker = sneaky();
    const r = await runMcp({ preset: "codex", attach: ["stamp"], allow: ["stamp/stamp"], agentExtra: CODEX_MODEL }, codexEnv(mock.url, marker));
    const offered = mock.offered(0);
    expect(r.finished.status, `${r.stdout}${r.stderr}\noffered: ${offered.join(",")}`).toBe("succeeded");
    expect(read(r.markers.stamp)).toContain('called stamp {"text":"hello"} token=tok-42');
    expect(read(r.markers.other)).toBe("");
    expect(read(marker)).toBe("");
    // the search, then the call
    expect(JSON.stringify(mock.requests[2])).toContain("stamped: hello");
    expect(r.leftovers).toEqual([]);
  });

  it("a tool outside the allowlist, or of a server the phase did not attach, is a policy_violation", async () => {
    for (const call of [CODEX_ERASE, CODEX_OTHER]) {
      const mock = await responsesMock([{ ...call, args: { text: "x" } }, { text: "Done." }]);
      const r = await runMcp({ preset: "codex", attach: ["stamp"], allow: ["stamp/stamp", "other/stamp"], agentExtra: CODEX_MODEL }, codexEnv(mock.url, sneaky()));
      expect(r.finished.error, `${call.namespace}/${call.call}: ${r.stdout}${r.stderr}`).toBe("policy_violation");
      expect(read(r.markers.stamp)).not.toContain("called erase");
      expect(read(r.markers.other)).toBe("");
    }
  });

  it("an MCP call codex let through but the allowlist does not name is a policy_violation afterwards (its mcp_tool_call item)", async () => {
    // a pattern in the allowlist: codex gets no enabled_tools, so it offers erase too
    const mock = await responsesMock([SEARCH, { ...CODEX_ERASE, args: {} }, { text: "Erased." }]);
    const r = await runMcp({ preset: "codex", attach: ["stamp"], allow: ["stamp/st*"], agentExtra: CODEX_MODEL }, codexEnv(mock.url, sneaky()));
    expect(read(r.markers.stamp)).toContain("called erase");
    expect(r.finished.error).toBe("policy_violation");
    expect(String(r.finished.message)).toMatch(/stamp\/erase is not in the tool set/);
  });

  it("a server that fails to start fails the phase with its message", async () => {
    const mock = await responsesMock([{ text: "Nothing to stamp with." }]);
    const r = await runMcp({ preset: "codex", attach: ["stamp"], allow: ["stamp/stamp"], agentExtra: CODEX_MODEL, serverEnv: { STAMP_FAIL: "cannot open the stamp pad" } }, codexEnv(mock.url, sneaky()));
    expect(r.finished.status, r.stdout + r.stderr).toBe("failed");
    expect(String(r.finished.message)).toMatch(/MCP server "stamp"/);
  });
});
