// Takes the screenshots of docs/ui.md with the real browser:
//   npm run build && node test/ui/screenshots.mjs [OUT_DIR]     (default docs/ui)
// A demo workdir is made by the real CLI, `phaseloop ui` serves it, a slow loop
// runs from a "terminal" meanwhile, and Debian's chromium looks at the pages
// and at a `report --html` file opened from disk.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import puppeteer from "puppeteer-core";
import { CLI, ROOT, cli, makeDemoWorkdir } from "./demo-workdir.mjs";

const out = resolve(process.argv[2] ?? join(ROOT, "docs/ui"));
mkdirSync(out, { recursive: true });
const { dir, runs } = makeDemoWorkdir();
const env = { PATH: process.env.PATH, HOME: process.env.HOME, CI: "true" };
const ui = spawn(process.execPath, [CLI, "ui", "--workdir", dir], { env, stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((res) => {
  let text = "";
  ui.stdout.on("data", (d) => {
    text += d;
    const m = /(http:\/\/\S+\?token=\S+)/.exec(text);
    if (m) res(m[1]);
  });
});
const slow = spawn(process.execPath, [CLI, "run", "slow.yaml", "--reporter", "plain"], { cwd: dir, env, stdio: "ignore" });
const profile = mkdtempSync(join(tmpdir(), "phaseloop-chromium-"));
const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 760, deviceScaleFactor: 1 });
  await page.goto(url);
  await page.waitForSelector("tr[data-state='running']", { timeout: 20_000 });
  await sleep(1500);
  await page.screenshot({ path: join(out, "runs.png") });
  const liveId = await page.$eval("tr[data-state='running']", (tr) => tr.getAttribute("data-key"));

  const open = async (key) => {
    await page.evaluate((k) => {
      history.pushState(null, "", `/run/${k}`);
      dispatchEvent(new PopStateEvent("popstate"));
    }, key);
    await page.waitForSelector(".run-page svg.graph");
    await sleep(600);
  };
  await page.setViewport({ width: 1280, height: 1500, deviceScaleFactor: 1 });
  await open(runs.demo);
  await page.click(".bar.s-failed").catch(() => undefined);
  await sleep(500);
  await page.screenshot({ path: join(out, "run.png") });

  await page.setViewport({ width: 1280, height: 980, deviceScaleFactor: 1 });
  await page.goto(url.replace("/?", `/run/${encodeURIComponent(liveId)}?`));
  await page.waitForSelector(".live-box pre div", { timeout: 10_000 }).catch(() => undefined);
  await sleep(2500);
  await page.screenshot({ path: join(out, "live.png") });

  await page.setViewport({ width: 1280, height: 560, deviceScaleFactor: 1 });
  await open(runs.ask);
  await page.type("form.answer input", "approve");
  await page.screenshot({ path: join(out, "answer.png") });

  const report = join(dir, "report.html");
  cli(["report", runs.demo, "--html", "-o", report], dir);
  const offline = await browser.newPage();
  await offline.setOfflineMode(true);
  await offline.setViewport({ width: 1280, height: 900, deviceScaleFactor: 1 });
  await offline.goto(pathToFileURL(report).href);
  await offline.waitForSelector("svg.graph .node.visited");
  await sleep(300);
  await offline.screenshot({ path: join(out, "report.png") });
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
  slow.kill("SIGINT");
  await new Promise((r) => slow.once("exit", r));
  ui.kill("SIGINT");
  rmSync(profile, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
}
