import { describe, expect, it } from "vitest";
import { geminiConfig, NO_MCP_SERVER, shellArgsPatterns } from "../../src/agents/presets/gemini.ts";

// Gemini CLI 0.61.0 refuses a policy regex with a group followed by a quantifier (isSafeRegExp)
const GEMINI_UNSAFE = /\([^)]*[*+?{].*\)[*+?{]/;
const allows = (pattern: string, command: string) => shellArgsPatterns(pattern).some((re) => new RegExp(re).test(JSON.stringify({ command, description: "run" })));

describe("gemini policy", () => {
  it("a bash pattern allows exactly its command, a final * further words", () => {
    expect(allows("npm test", "npm test")).toBe(true);
    expect(allows("npm test", "npm test --watch")).toBe(false);
    expect(allows("npm test", "npm testx")).toBe(false);
    expect(allows("npm test", "npm run build")).toBe(false);
    expect(allows("git diff *", "git diff")).toBe(true);
    expect(allows("git diff *", "git diff --stat HEAD")).toBe(true);
    expect(allows("git diff *", "git difftool")).toBe(false);
    expect(allows("ls src/*.ts", "ls src/a.ts")).toBe(true);
    expect(allows("ls src/*.ts", "ls src/a b.ts")).toBe(false);
    // quotes and backslashes are left to the engine's refusal and phaseloop's check
    expect(allows("echo *", 'echo "x"')).toBe(false);
    expect(allows("a.b", "axb")).toBe(false);
  });

  it("no regex Gemini CLI would refuse as unsafe", () => {
    for (const p of ["npm test", "git diff *", "echo *", "*", "ls src/*.ts", "a+b (c)"]) for (const re of shellArgsPatterns(p)) expect(GEMINI_UNSAFE.test(re), re).toBe(false);
  });

  it("a tool set becomes allow rules above a deny of everything else; none leaves the workdir's tools open", () => {
    const srv = { name: "srv", type: "stdio" as const, command: "node", args: ["s.mjs"], env: {}, cwd: "/w" };
    const c = geminiConfig({ read: ["src/**"], bash: ["npm test"], mcp: ["srv/tool"] }, [srv]);
    expect(c.approvalMode).toBe("default");
    expect(c.mcpServers).toEqual(["srv"]);
    expect(c.policy).toContain('toolName = "run_shell_command"');
    expect(c.policy).toContain('toolName = "mcp_srv_tool"');
    expect(c.policy).toMatch(/toolName = "\*"\ndecision = "deny"/);
    expect(c.policy).not.toContain('"write_file"');
    expect(geminiConfig({ write: ["src/**"] }).approvalMode).toBe("auto_edit");
    expect(geminiConfig({ write: ["src/**"] }).mcpServers).toEqual([NO_MCP_SERVER]);
    const open = geminiConfig(undefined);
    expect(open.policy).not.toContain("deny");
    expect(JSON.parse(open.settings)).toMatchObject({ general: { maxAttempts: 1 }, hooksConfig: { enabled: false }, tools: { discoveryCommand: "" } });
  });
});
