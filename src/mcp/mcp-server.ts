/**
 * The MCP servers of one phase, as its agent gets them: each declared server
 * the phase attaches, its templates rendered for the phase, its program and
 * cwd made absolute against the workdir. Pure, given the render function.
 */
import type { McpServerSpec } from "../pipeline/spec.ts";
import { joinPath } from "../pipeline/paths.ts";

export type McpServer =
  | { name: string; type: "stdio"; command: string; args: string[]; env: Record<string, string>; cwd: string }
  | { name: string; type: "http"; url: string; headers: Record<string, string> };

/** The phase's servers, in the order it names them; names not declared are left out (validate reports them). */
export function phaseMcpServers(names: readonly string[] | undefined, declared: Record<string, McpServerSpec> | undefined, workdir: string, render: (template: string) => string): McpServer[] {
  const out: McpServer[] = [];
  for (const name of names ?? []) {
    const spec = declared?.[name];
    if (!spec) continue;
    if ("command" in spec) {
      const cwdText = spec.cwd === undefined ? "" : render(spec.cwd).trim();
      const cwd = cwdText === "" ? workdir : cwdText.startsWith("/") ? cwdText : joinPath(workdir, cwdText);
      const [program = "", ...args] = spec.command.map(render);
      // a program given as a relative path is found from the server's cwd, whichever folder the CLI starts it from
      const command = program.includes("/") && !program.startsWith("/") ? joinPath(cwd, program) : program;
      out.push({ name, type: "stdio", command, args, env: renderMap(spec.env, render), cwd });
    } else {
      out.push({ name, type: "http", url: render(spec.url).trim(), headers: renderMap(spec.headers, render) });
    }
  }
  return out;
}

function renderMap(map: Record<string, string> | undefined, render: (template: string) => string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map ?? {})) out[k] = render(v);
  return out;
}

/** `host:port` of each HTTP server, for the phase's sandbox to let through. */
export function mcpHosts(servers: readonly McpServer[]): string[] {
  const hosts: string[] = [];
  for (const s of servers) {
    if (s.type !== "http") continue;
    const m = /^https?:\/\/(?:[^@/]*@)?(\[[^\]]+\]|[^/:?#]+)(?::(\d+))?/i.exec(s.url);
    if (!m) continue;
    const port = m[2] ?? (s.url.toLowerCase().startsWith("https:") ? "443" : "80");
    hosts.push(`${m[1]!.toLowerCase()}:${port}`);
  }
  return hosts;
}
