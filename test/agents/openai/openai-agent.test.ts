import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import picomatch from "picomatch";
import { afterAll, describe, expect, it } from "vitest";
import { runOpenAiAgent, type OpenAiAgentInput } from "../../../src/agents/openai/openai-agent.ts";
import { allowedBy, matchesPattern, outputFlagOrEscape, splitCommand } from "../../../src/agents/command-words.ts";
import { ChatStream } from "../../../src/agents/openai/chat-stream.ts";
import { textToolCalls } from "../../../src/agents/openai/text-tool-calls.ts";
import { runProcess } from "../../../src/host/run-process.ts";
import { startFakeOpenAi, type FakeServer, type ScriptedAnswer } from "../fake-openai.ts";
import { nodeHost } from "../../../src/host/node-host.ts";

const cleanup: (() => void)[] = [];
afterAll(() => cleanup.forEach((f) => f()));

function workspace(): string {
  const d = mkdtempSync(join(tmpdir(), "phaseloop-openai-ws-"));
  cleanup.push(() => rmSync(d, { recursive: true, force: true }));
  mkdirSync(join(d, "src"));
  writeFileSync(join(d, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(join(d, "README.md"), "# demo\n");
  return d;
}

async function server(script: ScriptedAnswer[]): Promise<FakeServer> {
  const s = await startFakeOpenAi(script);
  cleanup.push(() => s.stop());
  return s;
}

function input(base: string, workdir: string, over: Partial<OpenAiAgentInput> = {}): OpenAiAgentInput {
  return {
    agent: { preset: "openai", model: "qwen-test", base_url: base },
    prompt: "Fix the bug.",
    workdir,
    host: nodeHost,
    env: { PATH: process.env.PATH },
    glob: (patterns) => picomatch(patterns, { dot: true }),
    runCommand: async (argv, signal) => {
      const p = await runProcess({ command: argv, cwd: workdir, env: { PATH: process.env.PATH }, signal });
      return { exitCode: p.exitCode, output: p.stdout + p.stderrTail, timedOut: p.timedOut };
    },
    ...over,
  };
}

const tools = { read: ["**"], write: ["src/**"], bash: ["echo *", "node --version"] };

describe("the built-in OpenAI-compatible agent", () => {
  it("answers a plain prompt without tools, with the model, key and usage", async () => {
    const s = await server([{ content: "All good.\nVERDICT: APPROVE", usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 } }]);
    const r = await runOpenAiAgent(input(s.base, workspace(), { env: { MY_KEY: "sk-test" }, agent: { preset: "openai", model: "m1", base_url: s.base, api_key_env: "MY_KEY" } }));
    expect(r.report).toMatchObject({ success: true, text: "All good.\nVERDICT: APPROVE", tokens: 42 });
    expect(r.process).toMatchObject({ exitCode: 0, timedOut: false, aborted: false });
    const [req] = s.requests();
    expect(req!.url).toBe("/v1/chat/completions");
    expect(req!.auth).toBe("Bearer sk-test");
    expect(req!.body.model).toBe("m1");
    expect(req!.body.tools).toBeUndefined();
    expect(req!.body.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(req!.body.messages[1]!.content).toBe("Fix the bug.");
  });

  it("runs a tool loop inside the allowlist and sends each result back under its call id", async () => {
    const s = await server([
      { content: "Looking.", tool_calls: [{ name: "read_file", arguments: { path: "src/a.ts" } }, { name: "list_files", arguments: { path: "." } }] },
      { tool_calls: [{ name: "write_file", arguments: { path: "src/b.ts", content: "export const b = 2;\n" } }, { name: "run_command", arguments: { command: "echo 'hello world'" } }] },
      { content: "Done: added src/b.ts.\nSTATUS: COMPLETE" },
    ]);
    const ws = workspace();
    const lines: string[] = [];
    const r = await runOpenAiAgent(input(s.base, ws, { tools, onLine: (l) => lines.push(l) }));
    expect(r.report.success).toBe(true);
    expect(r.report.text).toBe("Done: added src/b.ts.\nSTATUS: COMPLETE");
    expect(r.report.tokens).toBe(45);
    expect(readFileSync(join(ws, "src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    const reqs = s.requests();
    expect(reqs).toHaveLength(3);
    expect(reqs[0]!.body.tools!.map((t) => t.function.name)).toEqual(["read_file", "list_files", "write_file", "run_command"]);
    const second = reqs[1]!.body.messages;
    expect(second.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
    expect(second[3]).toMatchObject({ tool_call_id: "call_1", content: "export const a = 1;\n" });
    expect(second[4]!.content).toBe("README.md\nsrc/a.ts");
    const third = reqs[2]!.body.messages;
    expect(third[6]!.content).toBe("wrote src/b.ts (20 bytes)");
    expect(third[7]!.content).toBe("exit code 0\nhello world\n");
    expect(lines).toContain("→ write_file src/b.ts");
    expect(lines.at(-1)).toBe("STATUS: COMPLETE");
  });

  it("refuses what the tool set does not allow, tells the model why, and records the denials", async () => {
    const ws = workspace();
    const outside = mkdtempSync(join(tmpdir(), "phaseloop-outside-"));
    cleanup.push(() => rmSync(outside, { recursive: true, force: true }));
    writeFileSync(join(outside, "secret.txt"), "s3cret");
    symlinkSync(outside, join(ws, "src", "link"));
    const calls = [
      { name: "write_file", arguments: { path: "README.md", content: "x" } }, // outside the write globs
      { name: "write_file", arguments: { path: "../escape.txt", content: "x" } }, // ..
      { name: "read_file", arguments: { path: join(outside, "secret.txt") } }, // absolute, elsewhere
      { name: "read_file", arguments: { path: "src/link/secret.txt" } }, // a symlink out
      { name: "write_file", arguments: { path: ".git/config", content: "x" } }, // protected
      { name: "run_command", arguments: { command: "rm -rf src" } }, // not in the bash patterns
      { name: "run_command", arguments: { command: "echo hi; rm -rf src" } }, // shell syntax
      { name: "run_command", arguments: { command: "echo $(whoami)" } }, // substitution
      { name: "delete_everything", arguments: {} }, // no such tool
      { name: "write_file", arguments: "{not json" }, // bad arguments
    ];
    const s = await server([{ tool_calls: calls }, { content: "I could not." }]);
    const r = await runOpenAiAgent(input(s.base, ws, { tools }));
    // the model finished, but a refused call fails the phase, as a denied tool does with the CLI agents
    expect(r.report.text).toBe("I could not.");
    expect(r.report.error).toMatchObject({ class: "policy_violation" });
    expect(r.report.error!.message).toMatch(/^the tool set refused 8 calls: write_file README\.md; write_file \.\.\/escape\.txt/);
    const results = s.requests()[1]!.body.messages.filter((m) => m.role === "tool").map((m) => m.content);
    expect(results.slice(0, 8).every((c) => c!.startsWith("refused: "))).toBe(true);
    expect(results[8]).toMatch(/^error: there is no tool "delete_everything"/);
    expect(results[9]).toMatch(/^error: the arguments are not valid JSON/);
    expect(r.report.permissionDenials.map((d) => d.tool)).toEqual(["write_file", "write_file", "read_file", "read_file", "write_file", "run_command", "run_command", "run_command"]);
    expect(readFileSync(join(ws, "README.md"), "utf8")).toBe("# demo\n");
    expect(existsSync(join(ws, "..", "escape.txt"))).toBe(false);
    expect(existsSync(join(ws, "src"))).toBe(true);
    expect(results.join("\n")).not.toContain("s3cret");
  });

  it("treats 429, 5xx and an unreachable server as transient, other HTTP errors as agent errors", async () => {
    const busy = await server([{ status: 503 }]);
    const r1 = await runOpenAiAgent(input(busy.base, workspace()));
    expect(r1.report.error).toMatchObject({ class: "transient" });
    expect(r1.report.error!.message).toContain("HTTP 503");
    const limited = await server([{ status: 429, body: '{"error":{"message":"slow down"}}' }]);
    expect((await runOpenAiAgent(input(limited.base, workspace()))).report.error).toEqual({ class: "transient", message: `HTTP 429 from ${limited.base}: slow down` });
    const missing = await server([{ status: 404, body: '{"error":"model \\"qwen-test\\" not found"}' }]);
    const r3 = await runOpenAiAgent(input(missing.base, workspace()));
    expect(r3.report.error).toMatchObject({ class: "agent_error" });
    expect(r3.report.error!.message).toContain("not found");
    const gone = await server([{ content: "x" }]);
    const base = gone.base;
    gone.stop();
    const r4 = await runOpenAiAgent(input(base, workspace()));
    expect(r4.report.error).toMatchObject({ class: "transient" });
    expect(r4.report.success).toBe(false);
  });

  it("gives up on a silent server after the idle timeout, and stops when interrupted", async () => {
    const s = await server([{ hang: true }]);
    const started = Date.now();
    const r = await runOpenAiAgent(input(s.base, workspace(), { idleTimeoutMs: 300 }));
    expect(r.process.idleTimedOut).toBe(true);
    expect(r.process.exitCode).toBeNull();
    expect(Date.now() - started).toBeLessThan(5000);
    const wall = await runOpenAiAgent(input(s.base, workspace(), { timeoutMs: 300 }));
    expect(wall.process.timedOut).toBe(true);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    const stopped = await runOpenAiAgent(input(s.base, workspace(), { signal: ac.signal }));
    expect(stopped.process.aborted).toBe(true);
  });

  it("fails a model that never stops calling tools, and one without a model name", async () => {
    const s = await server([{ tool_calls: [{ name: "list_files", arguments: { path: "." } }] }]);
    const r = await runOpenAiAgent(input(s.base, workspace(), { tools, maxRounds: 3 }));
    expect(r.report.error).toEqual({ class: "agent_error", message: "the model was still calling tools after 3 turns" });
    expect(s.requests()).toHaveLength(3);
    const none = await runOpenAiAgent(input(s.base, workspace(), { agent: { preset: "openai", base_url: s.base } }));
    expect(none.report.error!.message).toMatch(/needs a model/);
  });
});

describe("streamed answers", () => {
  it("counts the idle timeout from the last chunk, not from the request, and shows lines as they come", async () => {
    const s = await server([{ content: "thinking about it\nstill thinking\nSTATUS: COMPLETE", delay: 120 }]);
    const lines: { at: number; line: string }[] = [];
    const started = Date.now();
    const r = await runOpenAiAgent(input(s.base, workspace(), { idleTimeoutMs: 600, onLine: (line) => lines.push({ at: Date.now() - started, line }) }));
    expect(r.report).toMatchObject({ success: true, text: "thinking about it\nstill thinking\nSTATUS: COMPLETE", tokens: 15 });
    expect(Date.now() - started).toBeGreaterThan(600); // longer than the idle timeout in all
    expect(lines.map((l) => l.line)).toEqual(["thinking about it", "still thinking", "STATUS: COMPLETE"]);
    expect(lines[0]!.at).toBeLessThan(lines[2]!.at - 300); // the first line arrived well before the end
    expect(s.requests()[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("falls back to plain requests for a server that refuses streaming", async () => {
    const s = await server([{ content: "x", rejectStream: true }, { content: "plain answer", rejectStream: true }]);
    const r = await runOpenAiAgent(input(s.base, workspace()));
    expect(r.report).toMatchObject({ success: true, text: "plain answer" });
    expect(s.requests().map((q) => (q.body as { stream?: boolean }).stream)).toEqual([true, false]);
  });

  it("reads a plain JSON answer too", async () => {
    const s = await server([{ content: "no stream here" }]);
    const r = await runOpenAiAgent(input(s.base, workspace(), { stream: false }));
    expect(r.report).toMatchObject({ success: true, text: "no stream here", tokens: 15 });
  });

  const sse = [
    'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}',
    ": keep-alive comment",
    'data: {"choices":[{"index":0,"delta":{"content":"lo\\nwor"}}]}',
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\\"pa"}}]}}]}',
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\\": \\"a\\"}"}}]}}]}',
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"list_","arguments":"{}"}}]}}]}',
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"name":"files"}}]}}]}',
    "data: not json at all",
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
    'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}',
    "data: [DONE]",
    "",
  ].join("\n\n");

  it("puts content, tool call fragments and usage back together", () => {
    const lines: string[] = [];
    const chat = new ChatStream((l) => lines.push(l));
    chat.push(sse);
    chat.end();
    expect(chat.message()).toEqual({
      role: "assistant",
      content: "Hello\nwor",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "read_file", arguments: '{"path": "a"}' } },
        { id: "c2", type: "function", function: { name: "list_files", arguments: "{}" } },
      ],
    });
    expect(chat.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(chat.finished).toBe(true);
    expect(lines).toEqual(["Hello", "wor"]);
  });

  it("gives the same message however the bytes are split, and never throws on garbage", () => {
    const whole = new ChatStream();
    whole.push(sse);
    whole.end();
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: sse.length - 1 }), { maxLength: 12 }), fc.string(), (cuts, garbage) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const chat = new ChatStream();
        let last = 0;
        for (const p of [...points, sse.length]) {
          chat.push(sse.slice(last, p));
          last = p;
        }
        chat.end();
        expect(chat.message()).toEqual(whole.message());
        const noisy = new ChatStream();
        noisy.push(garbage);
        noisy.end();
        noisy.message();
      }),
    );
  });
});

describe("long command output", () => {
  it("keeps the start and the end, where test runners sum up", async () => {
    const s = await server([{ tool_calls: [{ name: "run_command", arguments: { command: "node -e 'for(let i=0;i<5000;i++)console.log(\"line \"+i)'" } }] }, { content: "ok" }]);
    const r = await runOpenAiAgent(input(s.base, workspace(), { tools: { bash: ["node -e *"] } }));
    expect(r.report.success).toBe(true);
    const result = s.requests()[1]!.body.messages.at(-1)!.content!;
    expect(result.length).toBeLessThan(16_200);
    expect(result).toMatch(/^exit code 0\nline 0\n/);
    expect(result).toMatch(/characters left out/);
    expect(result).toMatch(/line 4999\n$/);
  });
});

describe("tool calls written in the text (local models)", () => {
  const names = ["read_file", "write_file"];
  it("reads Hermes/Qwen <tool_call> blocks, bare JSON and fenced JSON, for offered tools only", () => {
    expect(textToolCalls('<tool_call>\n{"name": "read_file", "arguments": {"path": "a.ts"}}\n</tool_call>', names)).toEqual([{ name: "read_file", arguments: '{"path":"a.ts"}' }]);
    expect(textToolCalls('{"name": "write_file", "parameters": {"path": "b", "content": "x"}}', names)).toEqual([{ name: "write_file", arguments: '{"path":"b","content":"x"}' }]);
    expect(textToolCalls('```json\n{"function": {"name": "read_file", "arguments": "{\\"path\\": \\"c\\"}"}}\n```', names)).toEqual([{ name: "read_file", arguments: '{"path": "c"}' }]);
    expect(textToolCalls('<tool_call>{"name": "rm", "arguments": {}}</tool_call><tool_call>{"name": "read_file", "arguments": {}}</tool_call>', names)).toEqual([{ name: "read_file", arguments: "{}" }]);
    expect(textToolCalls("I will read a.ts next.", names)).toEqual([]);
    expect(textToolCalls('{"name": "read_file"}', [])).toEqual([]);
  });

  it("never throws, and names only offered tools", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json().map((j) => `<tool_call>${j}</tool_call>`), fc.json()), (text) => {
        for (const c of textToolCalls(text, names)) expect(names).toContain(c.name);
      }),
    );
  });

  it("carries them out in the loop", async () => {
    const s = await server([{ content: '<tool_call>{"name": "write_file", "arguments": {"path": "src/t.ts", "content": "t"}}</tool_call>' }, { content: "done" }]);
    const ws = workspace();
    const r = await runOpenAiAgent(input(s.base, ws, { tools }));
    expect(r.report).toMatchObject({ success: true, text: "done" });
    expect(readFileSync(join(ws, "src/t.ts"), "utf8")).toBe("t");
    const sent = s.requests()[1]!.body.messages;
    expect(sent[2]).toMatchObject({ role: "assistant", tool_calls: [{ id: "text_call_1_1", function: { name: "write_file" } }] });
    expect(sent[3]).toMatchObject({ role: "tool", tool_call_id: "text_call_1_1", content: "wrote src/t.ts (1 bytes)" });
  });
});

describe("commands the agent may run", () => {
  it("splits simple command lines and refuses shell syntax", () => {
    expect(splitCommand("git diff --stat HEAD~1")).toEqual({ ok: false, reason: expect.stringContaining("~") });
    expect(splitCommand(`grep -rn "a b" src`)).toEqual({ ok: true, argv: ["grep", "-rn", "a b", "src"] });
    expect(splitCommand("npm  test")).toEqual({ ok: true, argv: ["npm", "test"] });
    for (const bad of ["a | b", "a > f", "a && b", "a `b`", "echo $HOME", "ls *.ts", "'open", ""]) expect(splitCommand(bad).ok).toBe(false);
  });

  it("matches allowlist patterns word by word, with * for the rest", () => {
    expect(matchesPattern(["npm", "test"], "npm test")).toBe(true);
    expect(matchesPattern(["npm", "test", "--", "-u"], "npm test")).toBe(false);
    expect(matchesPattern(["git", "diff"], "git diff *")).toBe(true);
    expect(matchesPattern(["git", "diff", "--stat", "a.ts"], "git diff *")).toBe(true);
    expect(matchesPattern(["git", "push"], "git diff *")).toBe(false);
    expect(matchesPattern(["npx", "vitest", "run"], "npx vite*")).toBe(false);
    expect(matchesPattern(["npx", "vitest"], "npx vite*")).toBe(true);
    expect(allowedBy(["ls"], ["npm test", "ls"])).toBe("ls");
  });

  it("never throws on arbitrary text, and a word list it accepts holds no shell syntax outside quotes", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (text) => {
        const r = splitCommand(text);
        if (r.ok) {
          expect(r.argv.length).toBeGreaterThan(0);
          // no metacharacter reached a word except from inside quotes
          const unquoted = text.replace(/'[^']*'|"[^"]*"/g, "");
          expect(/[;&|<>`$]/.test(unquoted)).toBe(false);
        }
      }),
    );
  });
});

describe("commands the built-in agent is allowed still write nowhere else", () => {
  it.each([
    ["git diff --output=../x", /write a file/],
    ["git diff --output ../x", /write a file/],
    ["sort -o../x a.txt", /"\.\."/],
    ["sort -o /tmp/x a.txt", /absolute/],
    ["git diff -- .git/config", /\.git/],
    ["grep -r x .phaseloop", /\.phaseloop/],
  ])("%s is refused", (command, reason) => {
    const split = splitCommand(command);
    expect(split.ok).toBe(true);
    if (split.ok) expect(outputFlagOrEscape(split.argv)).toMatch(reason);
  });

  it.each(["git diff", "git diff src/a.ts", "grep -o foo src/a.ts", "npm test -- --watch=false"])("%s is left alone", (command) => {
    const split = splitCommand(command);
    if (split.ok) expect(outputFlagOrEscape(split.argv)).toBeUndefined();
  });
});
