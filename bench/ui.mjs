#!/usr/bin/env node
// The page of `phaseloop ui`, measured in a real browser (Debian's chromium,
// driven by puppeteer-core). As in bench/run.mjs, each figure is a ratio
// against a baseline measured in the same run, or a budget from the brief:
//   - opening the page of a 10,000-iteration run, against the page of a
//     10-iteration run (and within about a second);
//   - the DOM of that page (a virtual list: rows in sight only) and its
//     scrolling, as frame times while the timeline scrolls end to end;
//   - how soon a change in a running run reaches the open page (≤ 500 ms);
//   - a page left open on a busy run: its heap and DOM after a while against
//     the start (bounded, not growing with time).
//   npm run build && node bench/ui.mjs [--check] [--quick]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist/cli.cjs");
const quick = process.argv.includes("--quick");
const check = process.argv.includes("--check");
const CHROMIUM = "/usr/bin/chromium";
if (!existsSync(CHROMIUM)) {
  console.log("SKIP bench/ui.mjs: /usr/bin/chromium is absent (apt-get install chromium)");
  process.exit(check ? 1 : 0);
}
const { default: puppeteer } = await import("puppeteer-core");
const env = { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: "1", CI: "true" };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const results = [];
const report = (name, value, baseline, bar, unit = "ms") => {
  const ratio = baseline ? value / baseline : undefined;
  const ok = bar === undefined ? true : bar.ratio !== undefined ? ratio <= bar.ratio && (bar.max === undefined || value <= bar.max) : value <= bar.max;
  results.push({ name, value, baseline, ratio, ok });
  const barText = bar === undefined ? "" : ` (bar${bar.ratio !== undefined ? ` ≤ ${bar.ratio}×` : ""}${bar.max !== undefined ? ` ≤ ${bar.max}${unit}` : ""})`;
  console.log(`${ok ? "ok  " : "MISS"} ${name}: ${value.toFixed(1)}${unit}${baseline ? ` vs ${baseline.toFixed(1)}${unit} = ${ratio.toFixed(2)}×` : ""}${barText}`);
};

const work = mkdtempSync(join(tmpdir(), "phaseloop-bench-ui-"));
const PIPELINE = `phaseloop: 1
name: long-loop
phases:
  work:
    run: "true"
  check:
    run: "true"
    next:
      - if: exit_code == 7
        stop: complete
      - goto: work
stop: { max_iterations: 20000 }
`;

/** A finished run of `n` iterations written as the runner writes it (run.json, events.jsonl), two phases each. */
function syntheticRun(workdir, id, n) {
  const dir = join(workdir, ".phaseloop", "runs", id);
  mkdirSync(dir, { recursive: true });
  const file = join(workdir, "long.yaml");
  writeFileSync(file, PIPELINE);
  writeFileSync(join(dir, "run.json"), JSON.stringify({ run_id: id, pipeline: "long-loop", file, hash: "sha256:0", version: "0.1.0", params: {}, workdir, started_at: new Date(Date.UTC(2026, 0, 1)).toISOString() }));
  const t0 = Date.UTC(2026, 0, 1);
  let seq = 0;
  let t = t0;
  const at = () => new Date(t).toISOString();
  const lines = [];
  const ev = (e) => lines.push(JSON.stringify({ v: 1, seq: ++seq, at: at(), run: id, ...e }));
  ev({ type: "run.started", pipeline: "long-loop", file, hash: "sha256:0", workdir, params: {}, max_iterations: 20000, phases: ["work", "check"], version: "0.1.0" });
  let phaseSeq = 0;
  for (let i = 1; i <= n; i++) {
    ev({ type: "iteration.started", iteration: i, task: null });
    for (const phase of ["work", "check"]) {
      const failed = phase === "check" && i % 97 === 0;
      ev({ type: "phase.started", iteration: i, phase, attempt: 1, kind: "run", dir: `${String(++phaseSeq).padStart(4, "0")}-${phase}`, command: "true", sandbox: false });
      t += 3 + (i % 7);
      ev({ type: "phase.finished", iteration: i, phase, attempt: 1, status: failed ? "failed" : "succeeded", error: failed ? "exit_nonzero" : null, message: null, exit_code: failed ? 1 : 0, duration_ms: 3 + (i % 7), tokens: phase === "work" ? 120 : 0, cost_usd: phase === "work" ? 0.0004 : 0, output: {}, changes: [] });
    }
    ev({ type: "iteration.finished", iteration: i, changes: [], task: null });
  }
  ev({ type: "run.finished", outcome: "stopped", reason: { code: "max_iterations", message: `reached max_iterations (${n})` }, exit_code: 3, iterations: n, tokens: n * 120, cost_usd: n * 0.0004, elapsed_ms: t - t0 });
  writeFileSync(join(dir, "events.jsonl"), `${lines.join("\n")}\n`);
  return lines.length;
}

function startUi(workdir) {
  const child = spawn(process.execPath, [cli, "ui", "--workdir", workdir], { env, stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve) => {
    let text = "";
    child.stdout.on("data", (d) => {
      text += d;
      const m = /(http:\/\/\S+\?token=\S+)/.exec(text);
      if (m) resolve({ url: m[1], child });
    });
  });
}

const profile = mkdtempSync(join(tmpdir(), "phaseloop-chromium-"));
const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`] });
const cleanup = [];
try {
  const big = quick ? 3000 : 10000;
  const events = syntheticRun(work, "20260101-000000-long", big);
  syntheticRun(work, "20260101-000000-tiny", 10);
  syntheticRun(work, "20260101-000000-tiny0", 10);
  const ui = await startUi(work);
  cleanup.push(() => ui.child.kill("SIGINT"));
  const base = ui.url.split("/?")[0];
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  await page.goto(ui.url); // sets the cookie

  // 1. opening a run's page: until the graph, the timeline and the facts are drawn
  const open = async (id) => {
    const t = Date.now();
    await page.goto(`${base}/run/${id}`, { waitUntil: "domcontentloaded" });
    await page.waitForFunction(() => document.querySelector(".tl-row") && document.querySelector("svg.graph .node.visited") && document.querySelector(".facts-row .badge"), { polling: "raf", timeout: 30_000 });
    return Date.now() - t;
  };
  // the first open folds the whole log; the server keeps the fold, so opening it again reads only what is new
  await open("20260101-000000-tiny0"); // warm the browser and the server's code
  const tinyFirst = await open("20260101-000000-tiny");
  const longFirst = await open("20260101-000000-long");
  report(`open the page of a ${big.toLocaleString("en")}-iteration run (${events.toLocaleString("en")} events), first time`, longFirst, tinyFirst, { ratio: 30, max: 1500 });
  const tiny = [], long = [];
  for (let i = 0; i < (quick ? 3 : 5); i++) {
    tiny.push(await open("20260101-000000-tiny"));
    long.push(await open("20260101-000000-long"));
  }
  report(`open the same page again`, median(long), median(tiny), { ratio: 10, max: 1000 });

  // 2. the DOM holds the rows in sight, not one per iteration
  const rows = await page.$$eval(".tl-row", (r) => r.length);
  const nodes = await page.evaluate(() => document.getElementsByTagName("*").length);
  report(`timeline rows in the DOM for ${big.toLocaleString("en")} iterations`, rows, undefined, { max: 60 }, " rows");
  report("DOM elements of that page", nodes, undefined, { max: 3000 }, " elements");

  // 3. scrolling the timeline end to end: frame times
  const frames = await page.evaluate(async () => {
    const el = document.querySelector(".tl-scroll");
    el.scrollTop = 0;
    await new Promise((r) => requestAnimationFrame(r));
    const times = [];
    let last = performance.now();
    const steps = 240;
    for (let i = 1; i <= steps; i++) {
      el.scrollTop = (el.scrollHeight * i) / steps;
      await new Promise((r) => requestAnimationFrame(r));
      const now = performance.now();
      times.push(now - last);
      last = now;
    }
    return times;
  });
  report("scroll the timeline end to end: 95th percentile frame", pct(frames, 0.95), undefined, { max: 50 });

  // 4. a running run: how soon a new iteration in its log is on the page
  writeFileSync(join(work, "slow.yaml"), `phaseloop: 1\nname: ticking\nphases:\n  tick:\n    run: "sleep 0.15; echo tick {{ iteration }}"\n    next:\n      - if: exit_code == 7\n        stop: complete\n      - goto: tick\nstop: { max_iterations: ${quick ? 20 : 40} }\n`);
  const before = new Set(spawnSync("ls", [join(work, ".phaseloop/runs")], { encoding: "utf8" }).stdout.split("\n"));
  const run = spawn(process.execPath, [cli, "run", "slow.yaml", "--reporter", "plain"], { cwd: work, env, stdio: "ignore" });
  cleanup.push(() => run.kill("SIGINT"));
  let id;
  for (let i = 0; i < 200 && !id; i++) {
    await sleep(25);
    id = spawnSync("ls", [join(work, ".phaseloop/runs")], { encoding: "utf8" }).stdout.split("\n").find((x) => x && !before.has(x));
  }
  await page.goto(`${base}/run/${id}`);
  await page.waitForSelector(".tl-row");
  const log = join(work, ".phaseloop/runs", id, "events.jsonl");
  const lags = [];
  for (let target = 3; target <= (quick ? 8 : 16); target++) {
    // the moment the log has the iteration, polled every 2 ms here
    for (;;) {
      const text = existsSync(log) ? readFileSync(log, "utf8") : "";
      if (text.includes(`"type":"iteration.started","iteration":${target},`)) break;
      await sleep(2);
    }
    const seen = Date.now();
    await page.waitForFunction((n) => document.querySelectorAll(".tl-row").length >= n, { polling: "raf", timeout: 5000 }, target);
    lags.push(Date.now() - seen);
  }
  report("a new iteration in the log reaches the open page: median", median(lags), undefined, { max: 500 });
  report("the same: slowest", Math.max(...lags), undefined, { max: 1000 });
  await new Promise((r) => run.on("exit", r));

  // 5. a page left open on a busy run: heap and DOM stay bounded
  const seconds = quick ? 15 : 60;
  writeFileSync(join(work, "busy.yaml"), `phaseloop: 1\nname: busy\nphases:\n  talk:\n    run: "for i in $(seq 1 40); do echo line $i of iteration {{ iteration }} $(date +%N); sleep 0.01; done"\n    next:\n      - if: exit_code == 7\n        stop: complete\n      - goto: talk\nstop: { max_iterations: 100000, max_duration: ${seconds + 60}s }\n`);
  const busy = spawn(process.execPath, [cli, "run", "busy.yaml", "--reporter", "plain"], { cwd: work, env, stdio: "ignore" });
  cleanup.push(() => busy.kill("SIGINT"));
  await sleep(1500);
  const busyId = spawnSync("ls", [join(work, ".phaseloop/runs")], { encoding: "utf8" }).stdout.split("\n").filter(Boolean).sort().at(-1);
  await page.goto(`${base}/run/${busyId}`);
  await page.waitForSelector(".live-box pre div", { timeout: 10_000 });
  const cdp = await page.createCDPSession();
  const measure = async () => {
    await cdp.send("HeapProfiler.collectGarbage");
    const { usedSize } = await cdp.send("Runtime.getHeapUsage");
    const dom = await page.evaluate(() => document.getElementsByTagName("*").length);
    return { heap: usedSize / 1024 / 1024, dom };
  };
  // past the warm-up the output panel holds its most lines; from then on nothing may grow with time
  const warm = quick ? 8 : 20;
  await sleep(warm * 1000);
  const start = await measure();
  await sleep(seconds * 1000);
  const end = await measure();
  busy.kill("SIGINT");
  const iterations = await page.$$eval(".tl-row", (r) => r.length);
  console.log(`     (busy run: ${seconds}s, ~${Math.round(40 / 0.5)} output lines a second, page at ${iterations} timeline rows in sight)`);
  report(`page heap ${seconds}s later on a busy run, against ${warm}s in`, end.heap, start.heap, { ratio: 1.5 }, " MB");
  report(`page DOM elements ${seconds}s later, against ${warm}s in`, end.dom, start.dom, { ratio: 1.2 }, " elements");
} finally {
  for (const c of cleanup) c();
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
  await sleep(500);
  rmSync(work, { recursive: true, force: true });
}
const missed = results.filter((r) => !r.ok);
console.log(`\n${results.length - missed.length} of ${results.length} bars met`);
if (check && missed.length) process.exit(1);
