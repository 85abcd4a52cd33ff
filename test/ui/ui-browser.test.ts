/**
 * `phaseloop ui` in a real browser (Debian's chromium through puppeteer-core):
 * the runs list, a run started from a terminal appearing and advancing, the
 * controls (answer, stop, resume) checked in the run folders, the token and
 * Host checks, and every request the page makes staying on loopback.
 */
import { request } from "node:http";
import { join } from "node:path";
import process from "node:process";
import type { Browser } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipped } from "../skip-reason.ts";
import { CLI, ensureBuilt, write } from "../cli/cli-helpers.ts";
import { hasChromium, launchBrowser, lockHolder, makeWorkdir, PIPELINES, recordRequests, runEvents, startUi, until, type Recorded, type UiProcess } from "./ui-helpers.ts";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";

if (!hasChromium) {
  // loud: a browser test that does not run is not a pass
  process.stderr.write("\n*** test/ui/ui-browser.test.ts SKIPPED: /usr/bin/chromium is absent (apt-get install chromium) ***\n\n");
}

describe.skipIf(skipped(!hasChromium, "/usr/bin/chromium is absent (apt-get install chromium): the page is not tested in a browser"))("phaseloop ui in chromium", () => {
  let work: { dir: string; runs: Record<string, string> };
  let ui: UiProcess;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  const recorded: Recorded[] = [];

  beforeAll(async () => {
    ensureBuilt();
    work = makeWorkdir();
    ui = await startUi(work.dir);
    ({ browser, close: closeBrowser } = await launchBrowser());
  }, 120_000);

  afterAll(async () => {
    await closeBrowser?.();
    await ui?.stop();
    if (work) rmSync(work.dir, { recursive: true, force: true });
  });

  async function openPage(path = "") {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    const rec = await recordRequests(page);
    recorded.push(rec);
    await page.goto(path === "" ? ui.url : `${ui.url.replace("/?", `${path}?`)}`, { waitUntil: "domcontentloaded" });
    return { page, rec };
  }

  it("lists finished, failed, stopped and waiting runs with their outcome, and the token leaves the address", async () => {
    const { page, rec } = await openPage();
    await page.waitForSelector("tr[data-key]");
    expect(page.url()).toBe(`${ui.origin}/`);
    const rows = await page.$$eval("tr[data-key]", (trs) => trs.map((tr) => [tr.getAttribute("data-key"), tr.getAttribute("data-state"), tr.textContent]));
    const stateOf = (id: string) => rows.find((r) => r[0] === id)?.[1];
    expect(stateOf(work.runs.complete!)).toBe("complete");
    expect(stateOf(work.runs.fail!)).toBe("failed");
    expect(stateOf(work.runs.limit!)).toBe("stopped");
    expect(stateOf(work.runs.ask!)).toBe("awaiting answer");
    expect(rows.find((r) => r[0] === work.runs.complete)?.[2]).toContain("count-to-three");
    expect(rec.errors).toEqual([]);
    await page.close();
  });

  it("shows a run's graph with the path taken, its timeline and a phase's output", async () => {
    const { page, rec } = await openPage(`/run/${work.runs.fail}`);
    await page.waitForSelector("svg.graph .node.visited[data-phase='build']");
    expect(await page.$eval("svg.graph .node.kind-outcome.reached", (n) => n.textContent)).toContain("failed");
    expect(await page.$$eval(".tl-row", (r) => r.length)).toBe(1);
    await page.waitForFunction(() => document.querySelector(".phase-panel")?.textContent?.includes("missing semicolon"));
    expect(await page.$eval(".phase-panel", (p) => p.textContent)).toContain("exit_nonzero");
    expect(rec.errors).toEqual([]);
    await page.close();
  });

  it("shows a run started from a terminal at once, and follows it as it advances", async () => {
    const { page } = await openPage();
    await page.waitForSelector("tr[data-key]");
    const before = await page.$$eval("tr[data-key]", (t) => t.length);
    const run = spawn(process.execPath, [CLI, "run", "slow.yaml", "--reporter", "plain"], { cwd: work.dir, stdio: "ignore", env: { PATH: process.env.PATH, HOME: process.env.HOME, CI: "true" } });
    const exited = new Promise((r) => run.on("exit", r));
    const runId: string = await until("the run to hold the lock", () => lockHolder(work.dir) ?? undefined);
    await page.waitForSelector(`tr[data-key='${runId}'][data-state='running']`, { timeout: 5000 });
    expect(await page.$$eval("tr[data-key]", (t) => t.length)).toBe(before + 1);
    await page.click(`tr[data-key='${runId}'] a`);
    await page.waitForSelector(".run-page svg.graph");
    // it advances on the page: each iteration appears within half a second of being logged
    const lag: number[] = [];
    for (const target of [3, 4, 5]) {
      await until(`iteration ${target} in the log`, () => runEvents(work.dir, runId).some((e) => e.type === "iteration.started" && e.iteration === target), 30_000);
      const logged = Date.now();
      await page.waitForFunction((n) => document.querySelectorAll(".tl-row").length >= n, { timeout: 5000 }, target);
      lag.push(Date.now() - logged);
    }
    expect(Math.max(...lag)).toBeLessThan(1500); // under load; bench/ui.mjs measures it
    await page.waitForFunction(() => document.querySelector(".live-box pre")?.textContent?.includes("step"), { timeout: 5000 });
    await exited;
    await page.waitForSelector(".facts-row .badge.st-stopped", { timeout: 5000 });
    await page.close();
  }, 60_000);

  it("answers a waiting question from the page: the run goes on, as with resume --answer", async () => {
    const { page, rec } = await openPage(`/run/${work.runs.ask}`);
    await page.waitForSelector("form.answer input");
    await page.type("form.answer input", "approve");
    await page.click("form.answer button");
    const events = await until("the run to finish", () => {
      const ev = runEvents(work.dir, work.runs.ask!);
      return ev.some((e) => e.type === "run.finished") && ev;
    });
    expect(events.find((e) => e.type === "question.answered")).toMatchObject({ answer: "approve" });
    expect(events.at(-1)).toMatchObject({ type: "run.finished", outcome: "complete" });
    expect(existsSync(join(work.dir, "built.txt"))).toBe(true);
    await page.waitForSelector(".facts-row .badge.st-complete", { timeout: 10_000 });
    expect(rec.errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("stops a running run from the page (state saved, resumable) and resumes it", async () => {
    const run = spawn(process.execPath, [CLI, "run", "slow.yaml", "--reporter", "plain", "--max-iterations", "40"], { cwd: work.dir, stdio: "ignore", env: { PATH: process.env.PATH, HOME: process.env.HOME, CI: "true" } });
    const exited = new Promise<number | null>((r) => run.on("exit", (code) => r(code)));
    const runId = await until("the run to hold the lock", () => {
      const holder = lockHolder(work.dir);
      return holder !== null && runEvents(work.dir, holder).some((e) => e.type === "phase.started") && holder;
    });
    const { page } = await openPage(`/run/${runId}`);
    await page.waitForSelector("button[data-action='stop']");
    await page.click("button[data-action='stop']");
    expect(await exited).toBe(130);
    const stopped = runEvents(work.dir, runId);
    expect(stopped.at(-1)?.type).toBe("run.interrupted");
    expect(existsSync(join(work.dir, ".phaseloop/runs", runId, "state.json"))).toBe(true);
    await page.waitForSelector("button[data-action='resume']", { timeout: 10_000 });
    await page.click("button[data-action='resume']");
    await until("the run to resume", () => runEvents(work.dir, runId).some((e) => e.type === "run.resumed"));
    await page.waitForSelector("button[data-action='stop']", { timeout: 10_000 });
    // and stop it again, so the workdir is free
    await page.click("button[data-action='stop']");
    await until("the resumed run to stop", () => runEvents(work.dir, runId).at(-1)?.type === "run.interrupted" && lockHolder(work.dir) === null, 20_000);
    await page.close();
  }, 60_000);

  it("serves nothing without the token, and refuses a foreign Host and a foreign Origin", async () => {
    const context = await browser.createBrowserContext();
    const page = await context.newPage();
    const res = await page.goto(`${ui.origin}/`);
    expect(res?.status()).toBe(401);
    expect(await page.content()).not.toContain("page.js");
    for (const path of ["/api/runs", "/assets/page.js", `/api/stream?list=1`]) expect((await page.goto(`${ui.origin}${path}`))?.status()).toBe(401);
    await context.close();

    const token = new URL(ui.url).searchParams.get("token")!;
    const port = Number(new URL(ui.url).port);
    const ask = (path: string, headers: Record<string, string>, method = "GET", body?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port, path, method, headers }, (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end(body);
      });
    expect(await ask("/api/runs", { authorization: `Bearer ${token}` })).toBe(200);
    expect(await ask(`/api/runs?token=${token}`, {})).toBe(200); // a script's request is served, not sent on
    expect(await ask(`/?token=${token}`, {})).toBe(303); // a browser's first visit trades the token for the cookie
    expect(await ask("/api/runs", { authorization: `Bearer ${token}`, host: "attacker.example" })).toBe(421);
    expect(await ask(`/?token=${token}`, { host: `attacker.example:${port}` })).toBe(421);
    const post = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    expect(await ask("/api/stop", { ...post, origin: "http://attacker.example" }, "POST", JSON.stringify({ key: work.runs.complete }))).toBe(403);
    expect(await ask("/api/stop", { ...post }, "POST", JSON.stringify({ key: work.runs.complete }))).toBe(403);
    expect(await ask("/api/stop", { ...post, origin: ui.origin, "content-type": "text/plain" }, "POST", JSON.stringify({ key: work.runs.complete }))).toBe(403);
  });

  it("shows the first run of a workdir that had none", async () => {
    const fresh = mkdtempSync(join(tmpdir(), "phaseloop-ui-empty-"));
    write(fresh, { "slow.yaml": PIPELINES["slow.yaml"]!.replace("max_iterations: 8", "max_iterations: 2") });
    const second = await startUi(fresh);
    try {
      const page = await browser.newPage();
      const rec = await recordRequests(page);
      recorded.push(rec);
      await page.goto(second.url);
      await page.waitForSelector("p.empty:not([hidden])");
      const run = spawn(process.execPath, [CLI, "run", "slow.yaml", "--reporter", "plain"], { cwd: fresh, stdio: "ignore", env: { PATH: process.env.PATH, HOME: process.env.HOME, CI: "true" } });
      const exited = new Promise((r) => run.on("exit", r));
      await until("the run's folder", () => existsSync(join(fresh, ".phaseloop/runs")));
      await page.waitForSelector("tr[data-key]", { timeout: 3000 });
      await exited;
      await page.close();
    } finally {
      await second.stop();
      rmSync(fresh, { recursive: true, force: true });
    }
  }, 60_000);

  it("made no request off loopback, in any test", () => {
    const all = recorded.flatMap((r) => r.all);
    expect(all.length).toBeGreaterThan(10);
    expect(recorded.flatMap((r) => r.refused)).toEqual([]);
  });
});
