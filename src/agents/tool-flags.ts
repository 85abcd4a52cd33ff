import type { ToolSetSpec } from "../pipeline/spec.ts";

/**
 * The neutral allowlist in Claude Code's vocabulary: read globs → Read, Grep,
 * Glob; write globs → Edit(./glob) and Write(./glob); bash patterns →
 * Bash(pattern); mcp "server/tool" → mcp__server__tool.
 */
export function claudeAllowedTools(tools: ToolSetSpec | undefined, render: (t: string) => string = (t) => t): string[] {
  if (!tools) return [];
  const out: string[] = [];
  if ((tools.read ?? []).length > 0) out.push("Read", "Grep", "Glob");
  for (const w of tools.write ?? []) {
    const g = render(w).replace(/^\.\//, "");
    out.push(`Edit(./${g})`, `Write(./${g})`);
  }
  for (const b of tools.bash ?? []) out.push(`Bash(${render(b)})`);
  for (const m of tools.mcp ?? []) {
    const [server, tool = "*"] = m.split("/");
    out.push(`mcp__${server}__${tool}`);
  }
  return out;
}
