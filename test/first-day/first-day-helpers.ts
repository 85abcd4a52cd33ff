/**
 * A new user's first day, set up as it is met: a fresh clone of the commit, a git repository
 * of their own with a typical .gitignore and phaseloop installed in node_modules, the
 * commands the README and the docs show.
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { ROOT } from "../cli/cli-helpers.ts";

/** What a repository ignores on its first day. */
export const TYPICAL_GITIGNORE = "node_modules/\ndist/\n*.log\n.env\ncoverage/\n";

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function sh(command: string, cwd: string, env: Record<string, string | undefined> = {}, timeoutMs = 600_000): Ran {
  const r: SpawnSyncReturns<string> = spawnSync("sh", ["-c", command], { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1", ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  return { code: r.status, stdout: r.stdout ?? "", stderr: `${r.stderr ?? ""}${r.error ? `\n${String(r.error)}` : ""}` };
}

/**
 * A fresh clone of the commit under test (the working tree's uncommitted changes are not in
 * it). PHASELOOP_FIRST_DAY_SOURCE names another repository or URL to clone.
 */
export function freshClone(): string {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-first-day-"));
  const source = process.env.PHASELOOP_FIRST_DAY_SOURCE ?? ROOT;
  const r = spawnSync("git", ["clone", "--quiet", source, join(dir, "phaseloop")], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git clone ${source} failed: ${r.stderr}`);
  return join(dir, "phaseloop");
}

/**
 * The user's own repository: git, a typical .gitignore, `files`, and phaseloop installed as
 * a package (node_modules/phaseloop, its bin on node_modules/.bin) from `clone`, built.
 */
export function userRepo(clone: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "phaseloop-user-"));
  writeFileSync(join(dir, ".gitignore"), TYPICAL_GITIGNORE);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  mkdirSync(join(dir, "node_modules/.bin"), { recursive: true });
  symlinkSync(clone, join(dir, "node_modules/phaseloop"));
  symlinkSync("../phaseloop/dist/cli.cjs", join(dir, "node_modules/.bin/phaseloop"));
  for (const args of [["init", "-q"], ["add", "-A"], ["-c", "user.email=user@example.com", "-c", "user.name=User", "commit", "-qm", "first day"]]) spawnSync("git", args, { cwd: dir });
  return dir;
}

/** A team's package of loops (`@acme/loops`), sharing phaseloop's recipes as its own. */
export function installTeamPackage(clone: string, repo: string): void {
  const pkg = join(repo, "node_modules/@acme/loops");
  mkdirSync(pkg, { recursive: true });
  cpSync(join(clone, "pipelines"), join(pkg, "pipelines"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "@acme/loops", version: "1.0.0", phaseloop: { recipes: "pipelines" }, exports: { "./*.yaml": "./pipelines/*.yaml", "./pipelines/*": "./pipelines/*" } }, null, 2));
}

export interface DocBlock {
  /** Where it is written: `README.md:27`. */
  where: string;
  text: string;
}

/** The YAML code blocks of README.md and docs/*.md, with where each begins. */
export function yamlBlocks(root: string, files: string[]): DocBlock[] {
  const out: DocBlock[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8");
    for (const m of text.matchAll(/^```ya?ml\n([\s\S]*?)^```/gm)) out.push({ where: `${file}:${text.slice(0, m.index).split("\n").length}`, text: m[1]! });
  }
  return out;
}

/** A block that is a pipeline: it begins with `phaseloop: 1` or the schema comment (and is more than the comment). */
export function isPipeline(block: DocBlock): boolean {
  const first = block.text.trimStart().split("\n")[0] ?? "";
  return (first.startsWith("phaseloop: 1") || first.startsWith("# yaml-language-server:")) && /^phaseloop: /m.test(block.text);
}

/** A block that is a file the docs name by its first line (`# team/agents.yaml`). */
export function namedFile(block: DocBlock): string | undefined {
  return /^# ([\w./-]+\.ya?ml)\s*$/.exec(block.text.split("\n")[0] ?? "")?.[1];
}
