import type { AgentRunReport, StreamParser } from "./agent-adapter.ts";

/** Plain-text agents: the final message is the whole stdout; the exit code decides. */
export function createTextParser(): StreamParser {
  let last = "";
  let lines = 0;
  return {
    push(line) {
      lines++;
      if (line === "") return;
      // printable ASCII at both ends needs no trim (the common case, and the cheap one)
      const first = line.charCodeAt(0);
      const end = line.charCodeAt(line.length - 1);
      if (first > 32 && first < 127 && end > 32 && end < 127) last = line;
      else if (line.trim()) last = line.trim();
    },
    finish(stdout): AgentRunReport {
      return { text: stdout, success: null, tokens: 0, costUsd: 0, permissionDenials: [], lastLine: last || undefined, events: lines };
    },
  };
}
