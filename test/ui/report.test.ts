/**
 * `phaseloop report RUN_ID --html`: one file that opens from disk with the
 * network off and shows the run (graph, timeline, a phase's output), making no
 * request; and under GitHub Actions the run writes it beside summary.md.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipped } from "../skip-reason.ts";
import { cli, ensureBuilt, tempDir, write } from "../cli/cli-helpers.ts";
import { hasChromium, launchBrowser, makeWorkdir, recordRequests } from "./ui-helpers.ts";

let work: { dir: string; runs: Record<string, string> };

beforeAll(() => {
  ensureBuilt();
  work = makeWorkdir();
}, 120_000);

afterAll(() => {
  if (work) rmSync(work.dir, { recursive: true, force: true });
});

describe("report --html", () => {
  it("writes one file with the page and the run inside, beside summary.md by default", () => {
    const r = cli(["report", work.runs.fail!, "--html"], work.dir);
    expect(r.code).toBe(0);
    const file = join(work.dir, ".phaseloop/runs", work.runs.fail!, "report.html");
    expect(r.stdout.trim()).toBe(file);
    const html = readFileSync(file, "utf8");
    expect(html).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'sha256-/);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+stylesheet|https?:\/\/(?!www\.w3\.org)/);
    expect(html).toContain("missing semicolon");
  });

  it("writes where -o says, and refuses what it cannot do", () => {
    const out = join(work.dir, "out.html");
    expect(cli(["report", work.runs.complete!, "--html", "-o", "out.html"], work.dir).code).toBe(0);
    expect(existsSync(out)).toBe(true);
    expect(cli(["report", work.runs.complete!], work.dir).code).toBe(2);
    const unknown = cli(["report", "nope", "--html"], work.dir);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown run "nope"');
  });

  it("keeps a run's data from closing its script element", () => {
    const dir = tempDir();
    write(dir, {
      "evil.yaml": `phaseloop: 1
name: evil
phases:
  print:
    run: "echo '</script><script>document.title=1</script><!--'; exit 1"
    next:
      - stop: failed
        reason: "</script><b>bold</b>"
stop: { max_iterations: 1 }
`,
    });
    const run = cli(["run", "evil.yaml", "--reporter", "plain"], dir);
    expect(run.code).toBe(1);
    const r = cli(["report", "--html", "-o", "-"], dir);
    expect(r.code).toBe(0);
    const data = /<script type="application\/json" id="run-data">([\s\S]*?)<\/script>/.exec(r.stdout)?.[1] ?? "";
    expect(data).not.toContain("<");
    expect(JSON.stringify(JSON.parse(data))).toContain("</script><script>document.title=1</script>");
    expect(r.stdout.match(/<script/g)).toHaveLength(2);
  });

  it.skipIf(skipped(!hasChromium, "/usr/bin/chromium is absent (apt-get install chromium): the report is not opened in a browser"))("opens from disk with the network off and makes no request", async () => {
    const file = join(work.dir, ".phaseloop/runs", work.runs.complete!, "report.html");
    expect(cli(["report", work.runs.complete!, "--html"], work.dir).code).toBe(0);
    const { browser, close } = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.setOfflineMode(true);
      const rec = await recordRequests(page, true);
      const violations: string[] = [];
      page.on("console", (m) => {
        if (/Content Security Policy/.test(m.text())) violations.push(m.text());
      });
      await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
      await page.waitForSelector("svg.graph .node.visited");
      expect(await page.$$eval(".tl-row", (r) => r.length)).toBe(3);
      expect(await page.$eval("svg.graph .node.kind-outcome.reached", (n) => n.textContent)).toContain("complete");
      expect(await page.$$eval("button", (b) => b.length)).toBe(0); // read-only
      await page.waitForFunction(() => document.querySelector(".phase-panel")?.textContent?.includes("checking"));
      expect(rec.all.filter((u) => !u.startsWith("file://") && !u.startsWith("data:"))).toEqual([]);
      expect(rec.refused).toEqual([]);
      expect(rec.errors).toEqual([]);
      expect(violations).toEqual([]);
    } finally {
      await close();
    }
  }, 60_000);
});

describe("under GitHub Actions", () => {
  it("the run writes report.html beside summary.md, so the action's artifact has it", () => {
    const dir = tempDir();
    const w = makeWorkdir(dir);
    const env = { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: join(dir, "step-summary.md"), GITHUB_OUTPUT: join(dir, "github-output.txt"), GITHUB_WORKSPACE: dir };
    const r = cli(["run", "complete.yaml", "--reporter", "plain"], dir, env);
    expect(r.code).toBe(0);
    const id = /run (\d{8}-\d{6}-\w+) started/.exec(r.stdout)?.[1];
    expect(id).toBeDefined();
    const runFolder = join(dir, ".phaseloop/runs", id!);
    expect(existsSync(join(runFolder, "summary.md"))).toBe(true);
    expect(readFileSync(join(runFolder, "report.html"), "utf8")).toContain(`"key":"${id}"`);
    expect(w.runs.complete).not.toBe(id);
  });
});
