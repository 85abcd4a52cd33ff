/**
 * Preflight: the program of every stdio MCP server a phase attaches must
 * exist (on PATH, or as a path relative to the server's cwd), or the phase's
 * agent would start without it and fail only when its model reaches for it.
 */
import { joinPath } from "../pipeline/paths.ts";
import type { PreflightFindings, PreflightHost, PreflightInput, PreflightProblem } from "./preflight.ts";

export async function checkMcpCommands(input: PreflightInput, host: PreflightHost): Promise<PreflightFindings> {
  const servers = input.machine.mcp ?? {};
  const attached = new Set(input.machine.phases.flatMap((p) => (p.kind === "agent" ? (p.mcp ?? []) : [])));
  const checks: { name: string; program: string; cwd: string }[] = [];
  for (const name of attached) {
    const server = servers[name];
    if (!server || !("command" in server)) continue;
    const program = server.command[0];
    // a program chosen by a template is known only when the phase renders it
    if (program === undefined || program.includes("{{")) continue;
    const cwd = server.cwd !== undefined && !server.cwd.includes("{{") ? (server.cwd.startsWith("/") ? server.cwd : joinPath(input.workdir, server.cwd)) : input.workdir;
    checks.push({ name, program, cwd });
  }
  const found = await Promise.all(checks.map((c) => host.findProgram(c.program, c.cwd)));
  const problems: PreflightProblem[] = [];
  checks.forEach((c, i) => {
    if (found[i] !== null) return;
    problems.push({
      code: "MCP_COMMAND_NOT_FOUND",
      message: `MCP server "${c.name}" cannot start: its command runs "${c.program}", which is not installed or not on PATH${c.program.includes("/") ? ` (looked in ${c.cwd})` : ""}`,
      pointer: `/mcp/${c.name.replace(/~/g, "~0").replace(/\//g, "~1")}/command/0`,
      hint: `install "${c.program}", or fix the server's command`,
    });
  });
  return { problems };
}
