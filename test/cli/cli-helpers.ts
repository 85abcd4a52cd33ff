import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { afterAll } from "vitest";

export const ROOT = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
export const CLI = join(ROOT, "dist/cli.cjs");

/** Build dist/ once if it is missing or older than the sources it comes from. */
export function ensureBuilt(): void {
  const stamp = existsSync(CLI) ? statSync(CLI).mtimeMs : 0;
  const newest = spawnSync("sh", ["-c", `find ${join(ROOT, "src")} -name '*.ts' -newer ${CLI} | head -1`], { encoding: "utf8" }).stdout.trim();
  if (stamp === 0 || newest) {
    const r = spawnSync(process.execPath, [join(ROOT, "scripts/build.mjs")], { cwd: ROOT, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`build failed: ${r.stdout}${r.stderr}`);
  }
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const BASE_ENV = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp", NO_COLOR: "1", CI: "true" };

export function cli(args: string[], cwd: string, env: Record<string, string> = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", env: { ...BASE_ENV, ...env }, timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function cliAsync(args: string[], cwd: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...BASE_ENV, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const done = new Promise<CliResult>((res) => child.on("close", (code) => res({ code, stdout, stderr })));
  return { child, done, output: () => stdout };
}

const made: string[] = [];

/** A temp dir of the test file's own, removed when the file's tests have run. */
export function tempDir(prefix = "phaseloop-e2e-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

// each test file loads this module afresh, so this runs at the end of every file that made dirs,
// after the file's own afterAll hooks
afterAll(() => {
  for (const dir of made.splice(0)) removeTree(dir);
});

/** Remove a tree, folders a test made unwritable too; whatever cannot go (a process still writing) stays. */
function removeTree(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    spawnSync("chmod", ["-R", "u+rwx", dir]);
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // left for the OS's temp cleaning
    }
  }
}

export function write(dir: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    spawnSync("mkdir", ["-p", join(path, "..")]);
    writeFileSync(path, text);
    if (name.endsWith(".sh")) spawnSync("chmod", ["+x", path]);
  }
}

export function git(dir: string, ...args: string[]): void {
  spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd: dir });
}

export function events(dir: string): Record<string, unknown>[] {
  const runs = spawnSync("sh", ["-c", "ls -1 .phaseloop/runs | tail -1"], { cwd: dir, encoding: "utf8" }).stdout.trim();
  return readFileSync(join(dir, ".phaseloop/runs", runs, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export function runDir(dir: string): string {
  const id = spawnSync("sh", ["-c", "ls -1 .phaseloop/runs | tail -1"], { cwd: dir, encoding: "utf8" }).stdout.trim();
  return join(dir, ".phaseloop/runs", id);
}
