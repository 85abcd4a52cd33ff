import fc from "fast-check";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import type { ToolCall } from "../../src/agents/agent-adapter.ts";
import { createClaudeParser } from "../../src/agents/presets/claude.ts";
import { unwrapShell } from "../../src/agents/presets/codex.ts";
import { checkToolCalls, commandOutside } from "../../src/agents/tool-check.ts";
import { anchorGlob, expandBraces } from "../../src/agents/tool-globs.ts";

const glob = (globs: string[]) => picomatch(globs, { dot: true });
const call = (tool: string, kind: ToolCall["kind"], paths: string[], extra: Partial<ToolCall> = {}): ToolCall => ({ tool, kind, paths, ...extra });

describe("tool globs for gitignore-style rules", () => {
  it("expands braces, nested and numeric, and leaves a lone {x} alone", () => {
    expect(expandBraces("src/{a,b}.ts")).toEqual(["src/a.ts", "src/b.ts"]);
    expect(expandBraces("{src,test}/{x,y{1,2}}")).toEqual(["src/x", "src/y1", "src/y2", "test/x", "test/y1", "test/y2"]);
    expect(expandBraces("f{1..3}")).toEqual(["f1", "f2", "f3"]);
    expect(expandBraces("a{x}b")).toEqual(["a{x}b"]);
  });
  it("expansions match what picomatch matches", () => {
    const word = fc.stringMatching(/^[a-z]{1,3}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 2, maxLength: 3 }), word, fc.array(word, { minLength: 2, maxLength: 3 }), (xs, mid, ys) => {
        const g = `{${xs.join(",")}}${mid}{${ys.join(",")}}`;
        const all = expandBraces(g);
        for (const e of all) expect(picomatch.isMatch(e, g)).toBe(true);
        expect(new Set(all).size).toBe(new Set(xs).size * new Set(ys).size);
      }),
    );
  });
  it("anchors at the workdir: ./ dropped, a root path kept under it, glob characters of the workdir escaped", () => {
    expect(anchorGlob("/w", "./NOTES.md")).toBe("/w/NOTES.md");
    expect(anchorGlob("/w/", "/src/**")).toBe("/w/src/**");
    expect(anchorGlob("/w", ".")).toBe("/w/**");
    expect(anchorGlob("/a[1]", "x")).toBe("/a\\[1\\]/x");
  });
});

describe("the after-check of tool calls", () => {
  const tools = { read: ["src/**"], write: ["out/*.md"], bash: ["npm test", "git diff *"] };
  it("flags reads outside read ∪ write, writes outside write, and unknown commands", () => {
    const v = checkToolCalls(
      [
        call("Read", "read", ["/w/src/a.ts"]),
        call("Read", "read", ["/w/out/x.md"]),
        call("Read", "read", ["/w/../outside.txt"]),
        call("Read", "read", ["/w/.env"]),
        call("Edit", "write", ["/w/src/a.ts"]),
        call("Bash", "bash", [], { command: "npm test" }),
        call("Bash", "bash", [], { command: "git diff HEAD 2>&1 | head -5" }),
        call("Bash", "bash", [], { command: "npm test && node -e 'x'" }),
        call("Bash", "bash", [], { command: "cat $(ls)", refused: "denied" }),
      ],
      tools,
      "/w",
      glob,
    );
    expect(v).toHaveLength(5);
    expect(v[0]).toMatch(/read \/outside\.txt|read \/w\/\.\.\/outside\.txt/);
    expect(v[1]).toContain("read .env");
    expect(v[2]).toContain("wrote src/a.ts");
    expect(v[3]).toContain("head -5");
    expect(v[4]).toContain("node -e");
  });
  it("allows a search of a directory that holds readable files", () => {
    expect(checkToolCalls([call("Grep", "read", ["."], { search: true }), call("Glob", "read", ["/w/src"], { search: true })], tools, "/w", glob)).toEqual([]);
    expect(checkToolCalls([call("Grep", "read", ["/w/secret"], { search: true })], tools, "/w", glob)).toHaveLength(1);
  });
  it("splits command lists as a shell would, quotes respected", () => {
    expect(commandOutside("npm test; npm test", ["npm test"])).toBeUndefined();
    expect(commandOutside("git diff 'a;b'", ["git diff *"])).toBeUndefined();
    expect(commandOutside("npm test > x", ["npm test"])).toBe("npm test > x");
    expect(commandOutside("npm test | sh", ["npm test"])).toBe("sh");
    expect(unwrapShell("/bin/bash -lc 'npm test && git diff'")).toBe("npm test && git diff");
    expect(unwrapShell("node -e 1")).toBe("node -e 1");
  });
});

describe("claude's stream", () => {
  const lines = (evs: unknown[]) => {
    const p = createClaudeParser();
    const infos = evs.map((e) => p.push(JSON.stringify(e)));
    return { infos, report: p.finish("") };
  };
  const assistant = (content: unknown[]) => ({ type: "assistant", message: { content } });
  it("keeps every turn, reads tool calls and refusals, shows human lines, and is charged by the first result", () => {
    const { infos, report } = lines([
      { type: "system", subtype: "init", session_id: "s", model: "m", permissionMode: "dontAsk" },
      assistant([{ type: "text", text: "I will look." }, { type: "tool_use", id: "t1", name: "Read", input: { file_path: "/w/src/a.ts" } }]),
      assistant([{ type: "tool_use", id: "t2", name: "Write", input: { file_path: "/w/NOTES.md", content: "x" } }]),
      { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "t2", is_error: true, content: "Permission to use Write has been denied because Claude Code is running in don't ask mode." }] } },
      assistant([{ type: "text", text: "STATUS: COMPLETE" }]),
      { type: "result", subtype: "success", is_error: false, result: "STATUS: COMPLETE", total_cost_usd: 0.01, usage: { input_tokens: 10, output_tokens: 5 }, permission_denials: [{ tool_name: "Write", tool_input: { file_path: "/w/NOTES.md" } }] },
      { type: "result", subtype: "success", is_error: false, result: "again", total_cost_usd: 9, usage: { input_tokens: 1000 } },
    ]);
    expect(infos[1]?.display).toEqual(["I will look.", "→ Read /w/src/a.ts"]);
    expect(infos[3]?.display?.[0]).toMatch(/^✗ refused/);
    expect(infos[5]?.terminal).toBe(true);
    expect(infos[6]?.terminal).toBeUndefined();
    expect(report.transcript).toBe("I will look.\n\n---\n\nSTATUS: COMPLETE");
    expect(report).toMatchObject({ text: "STATUS: COMPLETE", tokens: 15, costUsd: 0.01, success: false, error: { class: "policy_violation" } });
    expect(report.error?.message).toContain("Write /w/NOTES.md");
    expect(report.toolCalls?.find((c) => c.id === "t2")?.refused).toMatch(/denied/);
  });
  it("judges API errors by their structured fields and quotes claude's message", () => {
    const r = (result: Record<string, unknown>) => lines([{ type: "result", ...result }]).report;
    expect(r({ subtype: "success", is_error: true, api_error_status: 401, result: "Invalid API key · Fix external API key" }).error).toEqual({ class: "agent_error", message: "claude: Invalid API key · Fix external API key (HTTP 401)" });
    expect(r({ subtype: "success", is_error: true, api_error_status: 529, result: "Overloaded" }).error?.class).toBe("transient");
    expect(r({ subtype: "success", is_error: true, api_error_status: 400, result: "Prompt is too long" }).error?.message).toContain("Prompt is too long");
    expect(r({ subtype: "error_max_turns", is_error: true, num_turns: 3 }).error).toMatchObject({ class: "agent_error", message: expect.stringContaining("turn limit") });
    // a tool's output that says 503 is not a transient failure
    expect(lines([assistant([{ type: "text", text: "HTTP 503 Service Unavailable" }]), { type: "result", subtype: "error_max_turns", is_error: true }]).report.error?.class).toBe("agent_error");
  });
});
