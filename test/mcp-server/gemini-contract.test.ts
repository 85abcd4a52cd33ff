/**
 * The real, pinned Gemini CLI with `phaseloop mcp` configured as docs/mcp.md
 * shows (settings.json `mcpServers`, the server trusted), against the
 * loopback Gemini API mock: the tools are offered as mcp_phaseloop_*, the
 * scripted model validates a pipeline, starts it and waits for it, and each
 * answer reaches the model's next request.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI } from "../cli/cli-helpers.ts";
import { agentBinDir, pinnedVersion } from "../agents-contract/agent-bins.ts";
import { geminiEnv } from "../agents-contract/agent-envs.ts";
import { contractSuite } from "../agents-contract/contract-helpers.ts";
import { startGeminiMock } from "../agents-contract/gemini-mock.ts";
import { listRuns, readStartedVia } from "../../src/control/index.ts";
import { QUICK, repo } from "../control/control-helpers.ts";

const bin = agentBinDir("@google/gemini-cli");
const track = contractSuite();

describe.skipIf(bin === undefined)(`Gemini CLI ${pinnedVersion("@google/gemini-cli")} with phaseloop mcp configured`, () => {
  it("offers the tools; validates, starts and waits for a run through them", async () => {
    const dir = repo({ "loops/quick.yaml": QUICK });
    const mock = track(
      await startGeminiMock([
        { call: "mcp_phaseloop_validate_pipeline", args: { path: "loops/quick.yaml" } },
        { call: "mcp_phaseloop_start_run", args: { pipeline: "loops/quick.yaml", params: { word: "gemini" } } },
        // the workdir's only run: a prefix of its id names it
        { call: "mcp_phaseloop_wait_for_run", args: { run_id: "2", timeout_seconds: 50 } },
        { text: "The run is complete." },
      ]),
    );
    const env = { ...geminiEnv(bin, mock.url, { settings: { mcpServers: { phaseloop: { command: process.execPath, args: [CLI, "mcp"], cwd: dir, trust: true, timeout: 600000 } } } }), GEMINI_CLI_TRUST_WORKSPACE: "true" };
    const r = await new Promise<{ code: number | null; out: string }>((resolveRun) => {
      const child = spawn(join(bin!, "gemini"), ["-p", "Run loops/quick.yaml.", "-o", "stream-json", "-m", "gemini-2.5-flash"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (d) => (out += d));
      child.stderr.on("data", (d) => (out += d));
      child.on("close", (code) => resolveRun({ code, out }));
    });
    expect(r.code, r.out.slice(-2000)).toBe(0);
    expect(mock.offered(0)).toEqual(expect.arrayContaining(["mcp_phaseloop_validate_pipeline", "mcp_phaseloop_start_run", "mcp_phaseloop_wait_for_run", "mcp_phaseloop_answer_question", "mcp_phaseloop_stop_run", "mcp_phaseloop_resume_run", "mcp_phaseloop_read_run_log", "mcp_phaseloop_get_run", "mcp_phaseloop_list_runs", "mcp_phaseloop_list_recipes"]));
    const results = r.out.split("\n").filter((l) => l.startsWith('{"type":"tool_result"')).map((l) => JSON.parse(l) as { status: string; output: string });
    expect(results.map((x) => x.status)).toEqual(["success", "success", "success"]);
    const sent = JSON.stringify(mock.requests.map((q) => q.body.contents));
    expect(sent).toContain("is valid");
    expect(sent).toMatch(/\\"end\\":\s*\\"finished\\"/);
    const runs = await listRuns(dir);
    expect(runs.map((x) => x.outcome)).toEqual(["complete"]);
    expect(await readStartedVia(dir, runs[0]!.run)).toBe("mcp");
    expect(readFileSync(join(dir, "said.txt"), "utf8")).toBe("gemini 1");
  }, 180_000);
});
