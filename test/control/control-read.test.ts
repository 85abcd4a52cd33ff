import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { getRun, listRecipes, readRunLog, startRun, stopRun, validatePipeline, waitForRun, type WaitProgress } from "../../src/control/index.ts";
import { cli } from "../cli/cli-helpers.ts";
import { ENV, ensureBuilt, refusal, repo, SLOW, write } from "./control-helpers.ts";

beforeAll(() => ensureBuilt(), 180_000);

const LONG = `phaseloop: 1
name: long-log
# the log is what is read here: phases unfenced, so the loop takes a moment, not a minute
sandbox: off
phases:
  tick:
    run: "true"
  tock:
    run: "true"
    next:
      - if: iteration >= 60
        stop: complete
      - goto: tick
stop: { max_iterations: 60 }
`;

describe("readRunLog pages a run's events with an opaque cursor", () => {
  const dir = repo({ "long.yaml": LONG });
  let runId = "";
  let all: Record<string, unknown>[] = [];
  beforeAll(() => {
    expect(cli(["run", "long.yaml", "--reporter", "plain"], dir).code).toBe(0);
    runId = JSON.parse(cli(["runs", "--json"], dir).stdout)[0].run as string;
    all = readFileSync(join(dir, ".phaseloop/runs", runId, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  }, 120_000);

  it("reads the whole log a page at a time, each event once, in order", async () => {
    expect(all.length).toBeGreaterThan(300);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await readRunLog(dir, runId, { cursor, limit: 37 });
      seen.push(...page.events);
      pages += 1;
      cursor = page.cursor;
      if (!page.more) break;
      expect(page.events.length).toBe(37);
    }
    expect(pages).toBe(Math.ceil(all.length / 37));
    expect(seen).toEqual(all);
    // at the end, the cursor waits for what comes later: an empty page
    expect(await readRunLog(dir, runId, { cursor })).toMatchObject({ events: [], more: false, cursor });
  });

  it("reads one phase's events only", async () => {
    const tocks = all.filter((e) => e.phase === "tock");
    const first = await readRunLog(dir, runId, { phase: "tock", limit: 50 });
    expect(first.events).toEqual(tocks.slice(0, 50));
    expect(first.more).toBe(true);
    const second = await readRunLog(dir, runId, { phase: "tock", limit: 1000, cursor: first.cursor });
    expect(second.events).toEqual(tocks.slice(50));
    expect(second.more).toBe(false);
    expect((await readRunLog(dir, runId, { phase: "nope" })).events).toEqual([]);
  });

  it("refuses a cursor it did not hand out, and limits out of range", async () => {
    const page = await readRunLog(dir, runId, { limit: 1 });
    for (const cursor of ["garbage", "", Buffer.from("events.jsonl@3").toString("base64url"), Buffer.from("events.jsonl@999999999").toString("base64url"), "../../etc/passwd"]) {
      expect((await refusal(readRunLog(dir, runId, { cursor }))).code, cursor).toBe("BAD_CURSOR");
    }
    expect((await readRunLog(dir, runId, { cursor: page.cursor, limit: 1 })).events).toEqual([all[1]]);
    for (const limit of [0, -1, 1.5, 1001]) expect((await refusal(readRunLog(dir, runId, { limit }))).code).toBe("BAD_ARGUMENT");
  });

  it("takes a unique prefix of a run id, as status does", async () => {
    expect((await getRun(dir, runId.slice(0, 17))).run).toBe(runId);
    expect((await readRunLog(dir, runId.slice(0, 17), { limit: 1 })).run).toBe(runId);
  });
});

describe("waitForRun", () => {
  it("reports progress while it waits, and ends at the timeout with the run still running", async () => {
    const dir = repo({ "slow.yaml": SLOW });
    const { runId } = await startRun({ workdir: dir, pipeline: "slow.yaml", via: "mcp", env: ENV });
    const progress: WaitProgress[] = [];
    const started = Date.now();
    const waited = await waitForRun(dir, runId, { timeoutMs: 2500, onProgress: (p) => progress.push(p) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2400);
    expect(waited.end).toBe("timeout");
    expect(waited.status.state).toBe("running");
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toMatchObject({ run: runId, phase: "work", iteration: expect.any(Number) });
    expect(progress.map((p) => p.seq)).toEqual([...progress.map((p) => p.seq)].sort((a, b) => a - b));

    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    expect((await waitForRun(dir, runId, { timeoutMs: 60_000, signal: ac.signal })).end).toBe("aborted");

    // a stop from elsewhere ends the wait
    const waiting = waitForRun(dir, runId, { timeoutMs: 60_000 });
    await stopRun(dir, runId);
    const ended = await waiting;
    expect(ended.end).toBe("stopped");
    expect(ended.status.state).toBe("interrupted");
  }, 60_000);

  it("ends at once for a run that has ended", async () => {
    const dir = repo({ "slow.yaml": SLOW.replace("max_iterations: 40", "max_iterations: 1") });
    expect(cli(["run", "slow.yaml", "--reporter", "plain"], dir).code).toBe(3);
    const runId = JSON.parse(cli(["runs", "--json"], dir).stdout)[0].run as string;
    const ended = await waitForRun(dir, runId, { timeoutMs: 60_000 });
    expect(ended).toMatchObject({ end: "finished", status: { state: "stopped" } });
  }, 60_000);
});

describe("validatePipeline", () => {
  it("answers what validate --json answers, for a file and for text", async () => {
    const dir = repo({ "bad.yaml": "phaseloop: 1\nname: bad\nphases:\n  a:\n    run: x\n    next: nowhere\nstop: { max_iterations: 2 }\n", "slow.yaml": SLOW });
    const expected = JSON.parse(cli(["validate", "--json", "bad.yaml"], dir).stdout)[0];
    const checked = await validatePipeline(dir, { path: "bad.yaml" });
    expect(checked).toEqual(expected);
    expect(checked.valid).toBe(false);
    expect(checked.diagnostics.find((d) => d.line === 6)).toMatchObject({ code: "UNKNOWN_PHASE", file: "bad.yaml", column: expect.any(Number), hint: expect.anything() });
    const fromText = await validatePipeline(dir, { text: readFileSync(join(dir, "bad.yaml"), "utf8") });
    expect(fromText.diagnostics.map((d) => [d.code, d.line, d.column])).toEqual(checked.diagnostics.map((d) => [d.code, d.line, d.column]));
    expect(await validatePipeline(dir, { path: "slow.yaml" })).toMatchObject({ valid: true, diagnostics: [], sandbox: { work: expect.any(String) } });
    const broken = await validatePipeline(dir, { text: "phaseloop: 1\nname: [unclosed\n" });
    expect(broken.valid).toBe(false);
    expect((await refusal(validatePipeline(dir, { text: "" }))).code).toBe("BAD_ARGUMENT");
  });

  it("text reads its prompt files from the workdir", async () => {
    const dir = repo({ "prompts/go.md": "Do it." });
    write(dir, {});
    const text = "phaseloop: 1\nname: p\nagents:\n  a: { command: [cat], prompt_via: stdin }\nphases:\n  go:\n    agent: a\n    prompt: prompts/go.md\n    next:\n      - stop: complete\nstop: { max_iterations: 1 }\n";
    expect(await validatePipeline(dir, { text })).toMatchObject({ valid: true });
    const missing = await validatePipeline(dir, { text: text.replace("prompts/go.md", "prompts/gone.md") });
    expect(missing.valid).toBe(false);
  });
});

describe("listRecipes", () => {
  it("lists phaseloop's recipes with their files, as recipes --json does", async () => {
    const dir = repo({});
    const recipes = await listRecipes(dir);
    const listed = JSON.parse(cli(["recipes", "--json"], dir).stdout) as { name: string }[];
    expect(recipes.map((r) => r.name)).toEqual(listed.map((r) => r.name));
    expect(recipes.every((r) => r.file.endsWith(".yaml"))).toBe(true);
  });
});
