import type { AgentRunReport, StreamParser } from "./agent-adapter.ts";

/** Plain-text agents: the final message is the whole stdout; the exit code decides. */
export function createTextParser(): StreamParser {
  let last = "";
  let lines = 0;
  return {
    push(line) {
      lines++;
      if (line.trim()) last = line.trim();
    },
    finish(stdout): AgentRunReport {
      return { text: stdout, success: null, tokens: 0, costUsd: 0, permissionDenials: [], lastLine: last || undefined, events: lines };
    },
  };
}
