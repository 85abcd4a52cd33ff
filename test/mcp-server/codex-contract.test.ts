/**
 * The real, pinned Codex CLI with `phaseloop mcp` configured as docs/mcp.md
 * shows (an [mcp_servers.phaseloop] table in config.toml), against the
 * loopback Responses API mock: the scripted model finds the tools through
 * codex's tool search, validates a pipeline and starts it; the run goes on.
 */
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { CLI } from "../cli/cli-helpers.ts";
import { agentBinDir, pinnedVersion } from "../agents-contract/agent-bins.ts";
import { codexEnv } from "../agents-contract/agent-envs.ts";
import { contractSuite } from "../agents-contract/contract-helpers.ts";
import { startResponsesMock, type ResponsesTurn } from "../agents-contract/responses-mock.ts";
import { listRuns, readStartedVia, waitForRun } from "../../src/control/index.ts";
import { QUICK, repo } from "../control/control-helpers.ts";

const bin = agentBinDir("@openai/codex");
const track = contractSuite();

/** codex defers MCP tools behind its tool search: the model searches, then calls what it found. */
const SEARCH: ResponsesTurn = { items: [{ type: "tool_search_call", call_id: "search_1", execution: "client", arguments: { query: "phaseloop pipeline run", limit: 10 } }] };

describe.skipIf(bin === undefined)(`Codex ${pinnedVersion("@openai/codex")} with phaseloop mcp configured`, () => {
  it("finds the tools, validates a pipeline and starts it", async () => {
    const dir = repo({ "loops/quick.yaml": QUICK });
    const mock = track(
      await startResponsesMock([
        SEARCH,
        { call: "validate_pipeline", namespace: "mcp__phaseloop", args: { path: "loops/quick.yaml" } },
        { call: "start_run", namespace: "mcp__phaseloop", args: { pipeline: "loops/quick.yaml", params: { word: "codex" } } },
        { text: "Started." },
      ]),
    );
    const server = `[mcp_servers.phaseloop]\ncommand = ${JSON.stringify(process.execPath)}\nargs = ${JSON.stringify([CLI, "mcp", "--workdir", dir])}\ntool_timeout_sec = 120\ndefault_tools_approval_mode = "approve"\n`;
    const env = codexEnv(bin, mock.url, { userConfig: server });
    const r = await new Promise<{ code: number | null; out: string }>((resolveRun) => {
      const child = spawn(`${bin}/codex`, ["exec", "--json", "--skip-git-repo-check", "-C", dir, "-m", "gpt-5.5", "-c", 'approval_policy="never"', "Validate and start loops/quick.yaml."], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      child.on("close", (code) => resolveRun({ code, out }));
    });
    expect(r.code, r.out.slice(-3000)).toBe(0);
    const calls = r.out.split("\n").filter((l) => l.includes('"mcp_tool_call"') && l.includes("item.completed")).map((l) => JSON.parse(l).item as { server: string; tool: string; status: string });
    expect(calls.map((c) => [c.server, c.tool, c.status])).toEqual([
      ["phaseloop", "validate_pipeline", "completed"],
      ["phaseloop", "start_run", "completed"],
    ]);
    expect(JSON.stringify(mock.requests[2])).toContain("is valid");
    const runs = await listRuns(dir);
    expect(runs.length).toBe(1);
    expect(await readStartedVia(dir, runs[0]!.run)).toBe("mcp");
    expect((await waitForRun(dir, runs[0]!.run, { timeoutMs: 60_000 })).status.state).toBe("complete");
  }, 180_000);
});
