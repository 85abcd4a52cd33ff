/**
 * A server that fails to start fails the phase. The CLIs carry on without
 * it (the model simply has fewer tools), so each preset says where its CLI
 * tells of it — claude's `system/init` event lists `mcp_servers` with a
 * status, gemini and codex say it on stderr — and this wraps the preset's
 * judge: a phase whose server failed did not succeed, whatever the model
 * did next. Pure.
 */
import type { Decoded, Ev, StreamPreset } from "../agents/stream-json.ts";

export interface McpStartFailure {
  /** The server; undefined when the CLI does not say which. */
  server?: string;
  /** The server's or the CLI's words, when it gives any. */
  reason?: string;
}

export interface McpStartDetector {
  event?(ev: Ev): McpStartFailure[] | undefined;
  stderr?(line: string): McpStartFailure[] | undefined;
  /** The servers whose tools the model called in this event: they were up after all (a slow server reported failed at start, then connected). */
  used?(ev: Ev): string[] | undefined;
}

export function withMcpStartCheck(preset: StreamPreset, detect: McpStartDetector): StreamPreset {
  const failed: McpStartFailure[] = [];
  const used = new Set<string>();
  const note = (found: McpStartFailure[] | undefined, d: Decoded | undefined): Decoded | undefined => {
    if (!found?.length) return d;
    const fresh = found.filter((f) => !failed.some((x) => x.server === f.server && (x.reason ?? "") === (f.reason ?? "")));
    failed.push(...fresh);
    if (!fresh.length) return d;
    return { ...(d ?? {}), display: [...(d?.display ?? []), ...fresh.map((f) => `✗ ${describe(f.server, f.reason)}`)] };
  };
  return {
    ...preset,
    decode: (ev) => {
      for (const server of detect.used?.(ev) ?? []) used.add(server);
      return note(detect.event?.(ev), preset.decode(ev));
    },
    decodeStderr: (line) => note(detect.stderr?.(line), preset.decodeStderr?.(line)),
    judge(terminal, seen) {
      const j = preset.judge(terminal, seen);
      const still = failed.filter((f) => f.server === undefined || !used.has(f.server));
      if (!still.length) return j;
      const servers = new Map<string | undefined, string | undefined>();
      for (const f of still) servers.set(f.server, servers.get(f.server) ?? f.reason);
      const said = [...servers].map(([s, r]) => describe(s, r)).join("; ");
      return { ...j, success: false, error: { class: "agent_error", message: j.success || !j.error ? said : `${said}; ${j.error.message}` } };
    },
  };
}

function describe(server: string | undefined, reason: string | undefined): string {
  return `${server === undefined ? "an MCP server of the phase" : `MCP server "${server}"`} failed to start${reason ? `: ${reason}` : ""}`;
}
