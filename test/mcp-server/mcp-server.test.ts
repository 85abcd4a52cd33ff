import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getRun, waitForRun } from "../../src/control/index.ts";
import { CLI } from "../cli/cli-helpers.ts";
import { ASK, ensureBuilt, QUICK, repo, SLOW, tempDir, write } from "../control/control-helpers.ts";
import { connect, errorOf, valueOf, type Connected } from "./mcp-helpers.ts";

beforeAll(() => ensureBuilt(), 180_000);

const TOOL_NAMES = ["list_recipes", "validate_pipeline", "start_run", "list_runs", "get_run", "read_run_log", "wait_for_run", "answer_question", "stop_run", "resume_run"];

describe("phaseloop mcp, driven by the SDK's own client", () => {
  const dir = repo({ "loops/quick.yaml": QUICK, "loops/ask.yaml": ASK, "loops/slow.yaml": SLOW, "loops/bad.yaml": "phaseloop: 1\nname: bad\nphases:\n  a:\n    run: x\n    next: nowhere\nstop: { max_iterations: 2 }\n" });
  let mcp: Connected;
  beforeAll(async () => {
    mcp = await connect(dir);
  }, 30_000);
  afterAll(async () => {
    await mcp?.close();
  });

  it("lists its ten tools, each with a description for a model, a schema and annotations", async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    for (const t of tools) {
      expect(t.description, t.name).toMatch(/Example: /);
      expect(t.description!.length, t.name).toBeGreaterThan(200);
      expect(t.inputSchema).toMatchObject({ type: "object", additionalProperties: false });
      expect(t.annotations, t.name).toMatchObject({ readOnlyHint: expect.any(Boolean), destructiveHint: expect.any(Boolean), idempotentHint: expect.any(Boolean), openWorldHint: expect.any(Boolean) });
    }
    const readOnly = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
    expect(readOnly).toEqual(["list_recipes", "validate_pipeline", "list_runs", "get_run", "read_run_log", "wait_for_run"]);
    expect(tools.find((t) => t.name === "stop_run")!.annotations!.destructiveHint).toBe(true);
    expect(mcp.client.getInstructions()).toContain("wait_for_run");
  });

  it("list_recipes lists phaseloop's recipes", async () => {
    const { recipes } = valueOf<{ recipes: { name: string; package: string }[] }>(await mcp.call("list_recipes"));
    expect(recipes.length).toBeGreaterThan(3);
    expect(recipes.every((r) => r.package === "phaseloop")).toBe(true);
  });

  it("validate_pipeline: valid, invalid with located diagnostics, text, and paths outside the workdir refused", async () => {
    expect(valueOf(await mcp.call("validate_pipeline", { path: "loops/quick.yaml" }))).toMatchObject({ file: "loops/quick.yaml", valid: true, diagnostics: [] });
    const bad = await mcp.call("validate_pipeline", { path: "loops/bad.yaml" });
    expect(bad.isError).toBe(true);
    const record = bad.structuredContent as { valid: boolean; diagnostics: Record<string, unknown>[] };
    expect(record.valid).toBe(false);
    expect(record.diagnostics.find((d) => d.code === "UNKNOWN_PHASE")).toMatchObject({ file: "loops/bad.yaml", line: 6, column: expect.any(Number), message: expect.any(String), hint: expect.anything() });
    expect(bad.content[0]!.text).toContain("invalid");
    const text = await mcp.call("validate_pipeline", { text: "phaseloop: 1\nname: t\nphases:\n  a:\n    run: \"true\"\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n" });
    expect(valueOf(text)).toMatchObject({ valid: true });
    const yamlError = await mcp.call("validate_pipeline", { text: "phaseloop: 1\nname: [oops\n" });
    expect(yamlError.isError).toBe(true);
    expect((yamlError.structuredContent as { diagnostics: { line: number }[] }).diagnostics[0]!.line).toBeGreaterThan(0);

    const outside = tempDir("phaseloop-outside-");
    write(outside, { "p.yaml": QUICK });
    symlinkSync(join(outside, "p.yaml"), join(dir, "link.yaml"));
    for (const path of ["../p.yaml", join(outside, "p.yaml"), "loops/../../p.yaml", "link.yaml", "/etc/passwd"]) {
      const refused = errorOf(await mcp.call("validate_pipeline", { path }));
      expect(refused.code, path).toBe("PATH_OUTSIDE_WORKDIR");
      expect(refused.message).toContain("outside the workdir");
      expect(errorOf(await mcp.call("start_run", { pipeline: path })).code, path).toBe("PATH_OUTSIDE_WORKDIR");
    }
    expect(errorOf(await mcp.call("validate_pipeline", {})).code).toBe("BAD_ARGUMENT");
    expect(errorOf(await mcp.call("validate_pipeline", { path: "a", text: "b" })).code).toBe("BAD_ARGUMENT");
  });

  it("start_run → wait_for_run (with progress) → the summary as a resource; recorded as started over MCP", async () => {
    const started = valueOf<{ run_id: string }>(await mcp.call("start_run", { pipeline: "loops/quick.yaml", params: { word: "$(touch pwned)", count: 2 } }));
    const progress: string[] = [];
    const waited = valueOf<{ end: string; status: Record<string, unknown> }>(
      await mcp.call("wait_for_run", { run_id: started.run_id, timeout_seconds: 60 }, { onprogress: (p) => progress.push(p.message ?? ""), timeout: 90_000, resetTimeoutOnProgress: true }),
    );
    expect(waited.end).toBe("finished");
    expect(waited.status).toMatchObject({ run: started.run_id, state: "complete" });
    expect(progress.length).toBeGreaterThan(0);
    expect(readFileSync(join(dir, "said.txt"), "utf8")).toBe("$(touch pwned) 2");
    expect(() => readFileSync(join(dir, "pwned"))).toThrow();

    const run = valueOf<Record<string, unknown>>(await mcp.call("get_run", { run_id: started.run_id }));
    expect(run).toMatchObject({ started_via: "mcp", state: "complete" });
    const info = JSON.parse(readFileSync(join(dir, ".phaseloop/runs", started.run_id, "run.json"), "utf8"));
    expect(info.started_via).toBe("mcp");
    const { runs } = valueOf<{ runs: { run: string }[] }>(await mcp.call("list_runs"));
    expect(runs[0]!.run).toBe(started.run_id);

    const { resources } = await mcp.client.listResources();
    expect(resources.map((r) => r.uri)).toContain(`phaseloop://runs/${started.run_id}/summary`);
    const { resourceTemplates } = await mcp.client.listResourceTemplates();
    expect(resourceTemplates[0]!.uriTemplate).toBe("phaseloop://runs/{run_id}/summary");
    const summary = await mcp.client.readResource({ uri: `phaseloop://runs/${started.run_id}/summary` });
    expect(summary.contents[0]).toMatchObject({ mimeType: "text/markdown", text: expect.stringContaining("complete") });
    await expect(mcp.client.readResource({ uri: "phaseloop://runs/nope/summary" })).rejects.toThrow(/unknown run/);
    await expect(mcp.client.readResource({ uri: "file:///etc/passwd" })).rejects.toThrow(/not a resource of phaseloop/);
  }, 90_000);

  it("a question: wait_for_run says so, answer_question lets the run go on", async () => {
    const { run_id } = valueOf<{ run_id: string }>(await mcp.call("start_run", { pipeline: "loops/ask.yaml" }));
    const asked = valueOf<{ end: string; status: { question: { question: string } } }>(await mcp.call("wait_for_run", { run_id, timeout_seconds: 50 }));
    expect(asked.end).toBe("question");
    expect(asked.status.question.question).toContain("Approve the plan");
    expect(errorOf(await mcp.call("resume_run", { run_id: "nope" })).code).toBe("UNKNOWN_RUN");
    valueOf(await mcp.call("answer_question", { run_id, answer: "approve" }));
    const done = valueOf<{ end: string; status: { state: string } }>(await mcp.call("wait_for_run", { run_id, timeout_seconds: 50 }));
    expect(done).toMatchObject({ end: "finished", status: { state: "complete" } });
    expect(readFileSync(join(dir, "built.txt"), "utf8")).toBe("approve");
    expect(errorOf(await mcp.call("answer_question", { run_id, answer: "again" })).code).toBe("RUN_FINISHED");
  }, 90_000);

  it("stop_run stops as Ctrl-C does; resume_run goes on; read_run_log pages the log", async () => {
    const { run_id } = valueOf<{ run_id: string }>(await mcp.call("start_run", { pipeline: "loops/slow.yaml", max_iterations: 40 }));
    expect(valueOf(await mcp.call("wait_for_run", { run_id, timeout_seconds: 1.5 }))).toMatchObject({ end: "timeout", status: { state: "running" } });
    expect(errorOf(await mcp.call("start_run", { pipeline: "loops/quick.yaml" })).code).toBe("WORKDIR_BUSY");
    expect(errorOf(await mcp.call("resume_run", { run_id })).code).toBe("RUN_RUNNING");
    const stopped = valueOf<{ stopped: boolean; status: { state: string } }>(await mcp.call("stop_run", { run_id }));
    expect(stopped).toMatchObject({ stopped: true, status: { state: "interrupted" } });
    expect(errorOf(await mcp.call("stop_run", { run_id })).code).toBe("RUN_NOT_RUNNING");
    expect(valueOf(await mcp.call("resume_run", { run_id }))).toMatchObject({ run_id, resumed: true });
    expect(valueOf(await mcp.call("get_run", { run_id }))).toMatchObject({ state: "running" });
    await mcp.call("wait_for_run", { run_id, timeout_seconds: 1 });
    expect(valueOf(await mcp.call("stop_run", { run_id }))).toMatchObject({ stopped: true });

    const seen: unknown[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const page = valueOf<{ events: unknown[]; cursor: string; more: boolean }>(await mcp.call("read_run_log", { run_id, limit: 3, ...(cursor ? { cursor } : {}) }));
      seen.push(...page.events);
      cursor = page.cursor;
      if (!page.more) break;
    }
    const logged = readFileSync(join(dir, ".phaseloop/runs", run_id, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    expect(seen).toEqual(logged);
    expect(logged.map((e) => e.type)).toEqual(expect.arrayContaining(["run.started", "run.interrupted", "run.resumed"]));
    const work = valueOf<{ events: { phase: string }[] }>(await mcp.call("read_run_log", { run_id, phase: "work" }));
    expect(work.events.length).toBeGreaterThan(0);
    expect(work.events.every((e) => e.phase === "work")).toBe(true);
    expect(errorOf(await mcp.call("read_run_log", { run_id, cursor: "not-a-cursor" })).code).toBe("BAD_CURSOR");
  }, 90_000);

  it("refuses what would weaken the fence, bad arguments and unknown runs, as results, and goes on serving", async () => {
    for (const extra of [{ sandbox: "off" }, { tools: { write: ["**"] } }, { workdir: "/" }, { dangerously_skip_permissions: true }, { env: { PATH: "/tmp" } }]) {
      const refused = errorOf(await mcp.call("start_run", { pipeline: "loops/quick.yaml", ...extra }));
      expect(refused.code).toBe("BAD_ARGUMENT");
      expect(refused.message).toMatch(/takes no argument .*nothing sent here can change them/);
    }
    expect(errorOf(await mcp.call("start_run", { pipeline: "loops/quick.yaml", params: { word: ["a"] } }))).toMatchObject({ code: "BAD_ARGUMENT", message: '"params.word" must be a string, a number or true/false' });
    expect(errorOf(await mcp.call("start_run", { pipeline: "loops/quick.yaml", max_iterations: 0 })).code).toBe("BAD_ARGUMENT");
    expect(errorOf(await mcp.call("start_run", {})).code).toBe("BAD_ARGUMENT");
    expect(errorOf(await mcp.call("start_run", { recipe: "no-such-recipe" })).code).toBe("PATH_NOT_FOUND");
    const invalid = errorOf(await mcp.call("start_run", { pipeline: "loops/bad.yaml" }));
    expect(invalid.code).toBe("PIPELINE_INVALID");
    expect(invalid.diagnostics!.some((d) => d.code === "UNKNOWN_PHASE" && d.line === 6)).toBe(true);
    const unknownParam = errorOf(await mcp.call("start_run", { pipeline: "loops/quick.yaml", params: { sandbox: "off" } }));
    expect(unknownParam.code).toBe("PIPELINE_INVALID");
    for (const name of ["get_run", "read_run_log", "wait_for_run", "stop_run", "resume_run"]) {
      for (const run_id of ["20990101-000000-zzzz", "../../../etc", "/etc/passwd"]) expect(errorOf(await mcp.call(name, { run_id })).code, `${name} ${run_id}`).toBe("UNKNOWN_RUN");
    }
    expect(errorOf(await mcp.call("answer_question", { run_id: "x", answer: "y" })).code).toBe("UNKNOWN_RUN");
    expect(errorOf(await mcp.call("get_run", { run_id: 42 })).code).toBe("BAD_ARGUMENT");
    expect(errorOf(await mcp.call("wait_for_run", {})).code).toBe("BAD_ARGUMENT");
    expect(errorOf(await mcp.call("no_such_tool")).code).toBe("BAD_ARGUMENT");
    expect((await mcp.client.listTools()).tools.length).toBe(10);
  }, 60_000);
});

describe("read_run_log over a long log", () => {
  it("pages 1,500 events and more, each once, in order; a phase's alone; the cursor picks up later events", async () => {
    const { cli } = await import("../cli/cli-helpers.ts");
    const pipeline = `phaseloop: 1\nname: long\nsandbox: off\nphases:\n  tick:\n    run: "true"\n  tock:\n    run: "true"\n    next:\n      - if: iteration >= 250\n        stop: complete\n      - goto: tick\nstop: { max_iterations: 250 }\n`;
    const dir = repo({ "long.yaml": pipeline });
    expect(cli(["run", "long.yaml", "--reporter", "json"], dir).code).toBe(0);
    const mcp = await connect(dir);
    try {
      const { runs } = valueOf<{ runs: { run: string }[] }>(await mcp.call("list_runs"));
      const run_id = runs[0]!.run;
      const logged = readFileSync(join(dir, ".phaseloop/runs", run_id, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
      expect(logged.length).toBeGreaterThan(1500);
      const seen: unknown[] = [];
      let cursor: string | undefined;
      let pages = 0;
      for (;;) {
        const page = valueOf<{ events: unknown[]; cursor: string; more: boolean }>(await mcp.call("read_run_log", { run_id, limit: 250, ...(cursor ? { cursor } : {}) }));
        seen.push(...page.events);
        cursor = page.cursor;
        pages += 1;
        if (!page.more) break;
      }
      expect(pages).toBe(Math.ceil(logged.length / 250));
      expect(seen).toEqual(logged);
      const tocks = valueOf<{ events: { phase: string; iteration: number }[] }>(await mcp.call("read_run_log", { run_id, phase: "tock", limit: 1000 }));
      expect(tocks.events.length).toBe(logged.filter((e) => e.phase === "tock").length);
      // at the end the cursor waits: what a later resume appends is what the next page holds
      expect(valueOf<{ events: unknown[] }>(await mcp.call("read_run_log", { run_id, cursor })).events).toEqual([]);
    } finally {
      await mcp.close();
    }
  }, 120_000);
});

describe("a client that goes away", () => {
  it("disconnecting mid-wait ends the server; the run it started goes on to its end", async () => {
    const dir = repo({ "slow.yaml": SLOW.replace(/40/g, "6") });
    const mcp = await connect(dir);
    const { run_id } = valueOf<{ run_id: string }>(await mcp.call("start_run", { pipeline: "slow.yaml" }));
    const server = mcp.pid;
    const waiting = mcp.call("wait_for_run", { run_id, timeout_seconds: 600 }, { timeout: 600_000 }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 300));
    await mcp.close(); // ends the server's stdin, as a client that quits does
    expect(await waiting).toBeInstanceOf(Error);
    expect(isAlive(server)).toBe(false);
    expect((await getRun(dir, run_id)).state).toBe("running");
    const end = await waitForRun(dir, run_id, { timeoutMs: 60_000 });
    expect(end).toMatchObject({ end: "finished", status: { state: "complete" } });
  }, 90_000);

  it("a server killed mid-call leaves its run going", async () => {
    const dir = repo({ "slow.yaml": SLOW.replace(/40/g, "4") });
    const mcp = await connect(dir);
    const { run_id } = valueOf<{ run_id: string }>(await mcp.call("start_run", { pipeline: "slow.yaml" }));
    const waiting = mcp.call("wait_for_run", { run_id, timeout_seconds: 600 }, { timeout: 600_000 }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    process.kill(mcp.pid, "SIGKILL");
    await waiting;
    await mcp.close();
    expect((await waitForRun(dir, run_id, { timeoutMs: 60_000 })).status.state).toBe("complete");
  }, 90_000);
});

describe("stdout is the protocol's only", () => {
  it("every line the server writes is a JSON-RPC message, errors included", async () => {
    const dir = repo({ "q.yaml": QUICK });
    mkdirSync(join(dir, "sub"));
    const child = spawn(process.execPath, [CLI, "mcp", "--workdir", dir], { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp" }, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const lines = [
      { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "validate_pipeline", arguments: { path: "../../etc/passwd" } } },
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "start_run", arguments: { pipeline: "q.yaml" } } },
      { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "wait_for_run", arguments: { run_id: "nope" } } },
    ];
    for (const l of lines) child.stdin.write(`${JSON.stringify(l)}\n`);
    child.stdin.write("this is not json\n");
    await new Promise((r) => setTimeout(r, 3000));
    child.stdin.end();
    const code = await new Promise((r) => child.on("close", r));
    expect(code).toBe(0);
    const messages = out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { jsonrpc: string; id?: number });
    expect(messages.every((m) => m.jsonrpc === "2.0")).toBe(true);
    expect(messages.map((m) => m.id).filter((id) => id !== undefined).sort()).toEqual([1, 2, 3, 4]);
    const started = messages.find((m) => m.id === 3) as unknown as { result: { structuredContent: { run_id: string } } };
    expect((await waitForRun(dir, started.result.structuredContent.run_id, { timeoutMs: 30_000 })).end).toBe("finished");
  }, 60_000);

  it("a workdir that does not exist is a usage error, before any protocol", async () => {
    const { cli } = await import("../cli/cli-helpers.ts");
    const r = cli(["mcp", "--workdir", "/no/such/dir"], tempDir());
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("does not exist");
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
