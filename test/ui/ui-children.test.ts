/**
 * A run's lanes and its sub-pipeline runs: listed under it on the runs list,
 * each with a page of its own, and the lanes as rows of the run's timeline.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipped } from "../skip-reason.ts";
import { cli, ensureBuilt, write } from "../cli/cli-helpers.ts";
import { laneRepo } from "../cli/lanes-helpers.ts";
import { listRunRows } from "../../src/ui/read-runs.ts";
import { nodeHost } from "../../src/host/node-host.ts";
import { hasChromium, launchBrowser, recordRequests, startUi } from "./ui-helpers.ts";

beforeAll(() => ensureBuilt(), 120_000);

const CHILD = `phaseloop: 1
name: analyse
phases:
  look:
    run: "echo looking at {{ params.target }}"
    next:
      - stop: complete
        reason: looked
params:
  target: { type: string, default: "." }
stop: { max_iterations: 2 }
`;

const PARENT = `phaseloop: 1
name: with-child
phases:
  analyse:
    pipeline: ./child.yaml
    params: { target: src }
  report:
    run: "echo reported"
    next:
      - stop: complete
stop: { max_iterations: 2 }
`;

describe("lanes and sub-pipeline runs", () => {
  let lanesDir: string;
  let subDir: string;
  let lanesRun: string;
  let subRun: string;

  beforeAll(() => {
    lanesDir = laneRepo({ a: {}, b: {}, c: { deps: ["a"] } }, 2, "0.05");
    const r = cli(["run", "p.yaml", "--reporter", "plain"], lanesDir);
    expect(r.code).toBe(0);
    lanesRun = /run (\d{8}-\d{6}-\w+) started/.exec(r.stdout)![1]!;
    subDir = join(lanesDir, "sub-workdir");
    write(subDir, { "child.yaml": CHILD, "parent.yaml": PARENT });
    const s = cli(["run", "parent.yaml", "--reporter", "plain"], subDir);
    expect(s.code).toBe(0);
    subRun = /run (\d{8}-\d{6}-\w+) started/.exec(s.stdout)![1]!;
  }, 120_000);

  afterAll(() => rmSync(lanesDir, { recursive: true, force: true }));

  it("are listed under their run, each with its outcome", async () => {
    const lanes = await listRunRows(lanesDir, nodeHost);
    expect(lanes[0]).toMatchObject({ key: lanesRun, depth: 0, state: "complete" });
    const children = lanes.filter((r) => r.depth === 1);
    expect(children.map((r) => [r.key, r.kind])).toEqual(["a", "b", "c"].map((t) => [`${lanesRun}/lanes/${t}`, "lane"]));
    for (const c of children) expect(c.state).toBe("complete");
    const sub = await listRunRows(subDir, nodeHost);
    expect(sub.map((r) => [r.key, r.depth, r.kind, r.pipeline, r.state])).toEqual([
      [subRun, 0, "run", "with-child", "complete"],
      [`${subRun}/sub/0001-analyse`, 1, "sub", "analyse", "complete"],
    ]);
  });

  it.skipIf(skipped(!hasChromium, "/usr/bin/chromium is absent (apt-get install chromium): the page is not tested in a browser"))("have pages of their own, and a run's lanes are rows of its timeline", async () => {
    const ui = await startUi(lanesDir);
    const { browser, close } = await launchBrowser();
    try {
      const page = await browser.newPage();
      const rec = await recordRequests(page);
      await page.goto(ui.url);
      await page.waitForSelector(`tr[data-key='${lanesRun}/lanes/a'] a`);
      await page.goto(`${ui.origin}/run/${lanesRun}`);
      await page.waitForSelector(".tl-row");
      const labels = await page.$$eval(".tl-label", (l) => l.map((x) => x.textContent ?? ""));
      for (const t of ["a", "b", "c"]) expect(labels.some((l) => l.startsWith(`${t} · iteration`))).toBe(true);
      await page.goto(`${ui.origin}/run/${lanesRun}/lanes/c`);
      await page.waitForSelector("svg.graph .node.visited[data-phase='execute']");
      expect(await page.$$eval("button", (b) => b.length)).toBe(0); // a lane is steered through its run
      expect(rec.refused).toEqual([]);
      expect(rec.errors).toEqual([]);
    } finally {
      await close();
      await ui.stop();
    }
  }, 60_000);
});
