/**
 * What the page's tests, bench and screenshots share: a workdir with runs of
 * every outcome made by the real CLI, `phaseloop ui` started as users start
 * it, and Debian's chromium driven by puppeteer-core with every request the
 * page makes recorded (and any that would leave loopback refused).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { Browser, Page } from "puppeteer-core";
import { CLI, cli, git, write } from "../cli/cli-helpers.ts";

export const CHROMIUM = "/usr/bin/chromium";
export const hasChromium = existsSync(CHROMIUM);

export async function launchBrowser(): Promise<{ browser: Browser; close: () => Promise<void> }> {
  const { default: puppeteer } = await import("puppeteer-core");
  const profile = mkdtempSync(join(tmpdir(), "phaseloop-chromium-"));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", `--user-data-dir=${profile}`],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export interface Recorded {
  /** Every URL the page asked for. */
  all: string[];
  /** Those that were not to loopback, a data: URL or (for a report) the file itself: refused. */
  refused: string[];
  errors: string[];
}

/** Records every request of the page; refuses any that would leave the machine. */
export async function recordRequests(page: Page, allowFile = false): Promise<Recorded> {
  const rec: Recorded = { all: [], refused: [], errors: [] };
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const url = req.url();
    rec.all.push(url);
    const local = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\//.test(url) || url.startsWith("data:") || (allowFile && url.startsWith("file://"));
    if (local) void req.continue();
    else {
      rec.refused.push(url);
      void req.abort();
    }
  });
  page.on("pageerror", (e) => rec.errors.push(String((e as Error).message ?? e)));
  page.on("console", (m) => {
    if (m.type() === "error") rec.errors.push(m.text());
  });
  return rec;
}

export interface UiProcess {
  url: string;
  origin: string;
  child: ChildProcess;
  stop: () => Promise<void>;
}

/** `phaseloop ui --workdir DIR`, as a user starts it; resolves with the address it prints. */
export async function startUi(workdir: string, extra: string[] = []): Promise<UiProcess> {
  const child = spawn(process.execPath, [CLI, "ui", "--workdir", workdir, ...extra], { cwd: workdir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d) => (err += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`phaseloop ui printed no address: ${out}${err}`)), 20_000);
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /(http:\/\/\S+\?token=\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.on("exit", (code) => reject(new Error(`phaseloop ui exited ${code}: ${out}${err}`)));
  });
  return {
    url,
    origin: new URL(url).origin,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGINT");
      }),
  };
}

export const PIPELINES: Record<string, string> = {
  "complete.yaml": `phaseloop: 1
name: count-to-three
phases:
  work:
    run: "echo working; echo line >> out.txt"
  check:
    run: "echo checking; test $(wc -l < out.txt) -ge 3"
    next:
      - if: status == 'succeeded'
        stop: complete
        reason: three lines written
      - goto: work
stop: { max_iterations: 5 }
`,
  "fail.yaml": `phaseloop: 1
name: always-fails
phases:
  build:
    run: "echo compiling; echo 'error: missing semicolon' >&2; exit 1"
    next:
      - if: status == 'failed'
        stop: failed
        reason: the build failed
stop: { max_iterations: 3 }
`,
  "limit.yaml": `phaseloop: 1
name: never-done
phases:
  try:
    run: "echo trying"
    next:
      - if: exit_code == 7
        stop: complete
      - goto: try
stop: { max_iterations: 2 }
`,
  "ask.yaml": `phaseloop: 1
name: approve-plan
phases:
  plan:
    run: "echo plan >> plans.txt"
  approve:
    ask: "Review plans.txt. Answer 'approve' or say what to change."
    next:
      - if: answer == 'approve'
        goto: build
      - goto: plan
  build:
    run: "echo built > built.txt"
    next:
      - stop: complete
        reason: approved and built
stop: { max_iterations: 3 }
`,
  "slow.yaml": `phaseloop: 1
name: slow-loop
phases:
  work:
    run: "for i in 1 2 3; do echo step $i of iteration {{ iteration }}; sleep 0.3; done"
  review:
    run: "echo reviewing; sleep 0.3"
    next:
      - if: exit_code == 7
        stop: complete
stop: { max_iterations: 8 }
`,
};

/** A git repository with a .gitignore and the pipelines above, and runs that completed, failed, stopped at a limit and wait for an answer. */
export function makeWorkdir(dir = mkdtempSync(join(tmpdir(), "phaseloop-ui-"))): { dir: string; runs: Record<string, string> } {
  write(dir, { ...PIPELINES, ".gitignore": "node_modules/\n" });
  git(dir, "init", "-q");
  git(dir, "add", ".");
  git(dir, "commit", "-qm", "init");
  const runs: Record<string, string> = {};
  for (const [name, code] of [["complete", 0], ["fail", 1], ["limit", 3], ["ask", 3]] as const) {
    const r = cli(["run", `${name}.yaml`, "--reporter", "plain"], dir);
    if (r.code !== code) throw new Error(`run ${name}.yaml exited ${r.code}: ${r.stdout}${r.stderr}`);
    // ids of runs started in the same second sort by their random tail: take the id the run printed
    const id = /run (\d{8}-\d{6}-\w+) started/.exec(r.stdout)?.[1];
    if (id === undefined) throw new Error(`run ${name}.yaml printed no run folder: ${r.stdout}${r.stderr}`);
    runs[name] = id;
  }
  return { dir, runs };
}

export function latestRun(dir: string): string {
  return readdirSync(join(dir, ".phaseloop", "runs")).sort().at(-1)!;
}

export function runEvents(dir: string, runId: string): { type: string; [k: string]: unknown }[] {
  const path = join(dir, ".phaseloop", "runs", runId, "events.jsonl");
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as { type: string }];
      } catch {
        return [];
      }
    });
}

export async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function lockHolder(dir: string): string | null {
  try {
    return (JSON.parse(readFileSync(join(dir, ".phaseloop", "lock"), "utf8")) as { run_id?: string }).run_id ?? null;
  } catch {
    return null;
  }
}

export { spawnSync };
