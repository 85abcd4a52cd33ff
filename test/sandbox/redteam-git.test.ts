/**
 * phaseloop's own git and PATH, attacked the way it was met: a nested
 * repository with a clean filter and an fsmonitor in its config (which git
 * reached through submodule recursion while measuring changes), and a `git`
 * and `sh` planted in `node_modules/.bin`, first on PATH under `npx`.
 * Each escape is first shown to work against plain git, then shown not to
 * work against phaseloop's.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import process from "node:process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GIT_HARDENING, ownGitEnv } from "../../src/host/own-git.ts";
import { ownPath, ownProgram, resolveOwnPrograms, untrustedPathEntry } from "../../src/host/own-programs.ts";
import { findRepo, runGit, writeSlotIndex } from "../../src/changes/private-git.ts";
import { cli, ensureBuilt } from "../cli/cli-helpers.ts";

const root = mkdtempSync(join(tmpdir(), "pl-redteam-git-"));
const marker = join(root, "PWNED");
const G = ["-c", "user.name=a", "-c", "user.email=a@a"];

/** A repository whose index holds `vendor/x`, a nested repository whose own config runs a program on status. */
function hostileRepo(name: string): string {
  const repo = join(root, name);
  mkdirSync(join(repo, "vendor", "x"), { recursive: true });
  execFileSync("git", ["init", "-q", repo]);
  writeFileSync(join(repo, ".gitignore"), "node_modules/\n");
  writeFileSync(join(repo, "README.md"), "readme\n");
  execFileSync("git", [...G, "add", "-A"], { cwd: repo });
  execFileSync("git", [...G, "commit", "-qm", "init"], { cwd: repo });
  const nested = join(repo, "vendor", "x");
  execFileSync("git", ["init", "-q", nested]);
  execFileSync("git", ["config", "filter.evil.clean", `touch ${marker}; cat`], { cwd: nested });
  execFileSync("git", ["config", "core.fsmonitor", `touch ${marker}-fsmonitor; false`], { cwd: nested });
  writeFileSync(join(nested, ".gitattributes"), "* filter=evil\n");
  writeFileSync(join(nested, "f"), "a\n");
  execFileSync("git", ["-c", "core.fsmonitor=false", ...G, "add", "-A"], { cwd: nested });
  execFileSync("git", ["-c", "core.fsmonitor=false", ...G, "commit", "-qm", "x"], { cwd: nested });
  rmSync(marker, { force: true });
  // the measure's index records vendor/x as the agent left it: a gitlink
  execFileSync("git", ["update-index", "--add", "vendor/x"], { cwd: repo });
  writeFileSync(join(nested, "f"), "changed\n");
  return repo;
}

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("a nested repository's config runs nothing through phaseloop's git", () => {
  it("plain git status runs the nested filter; phaseloop's runs nothing", () => {
    const repo = hostileRepo("nested");
    spawnSync("git", ["status", "--porcelain"], { cwd: repo });
    expect(existsSync(marker) || existsSync(`${marker}-fsmonitor`)).toBe(true); // the escape, as met
    rmSync(marker, { force: true });
    rmSync(`${marker}-fsmonitor`, { force: true });
    const r = runGit(["status", "--porcelain"], repo);
    expect(r.ok).toBe(true);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(`${marker}-fsmonitor`)).toBe(false);
    for (const args of [["diff", "HEAD", "--name-only"], ["ls-files", "-m"]]) {
      runGit(args, repo);
      expect(existsSync(marker), args.join(" ")).toBe(false);
    }
    // the measure's own `git add -A` into its index, twice (the second sees the gitlink the first recorded)
    const found = findRepo(repo)!;
    expect(writeSlotIndex(repo, found, "a")).toBeDefined();
    writeFileSync(join(repo, "vendor", "x", "f"), "changed again\n");
    expect(writeSlotIndex(repo, found, "b")).toBeDefined();
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(`${marker}-fsmonitor`)).toBe(false);
  });

  it("the hardening names every setting that runs a program, and drops the parent's GIT_* variables", () => {
    const flat = GIT_HARDENING.join(" ");
    for (const key of ["core.hooksPath=/dev/null", "core.fsmonitor=false", "diff.ignoreSubmodules=all", "submodule.recurse=false", "core.pager=cat", "credential.helper="]) expect(flat).toContain(key);
    process.env.GIT_DIR = "/elsewhere";
    process.env.GIT_EXTERNAL_DIFF = "touch /tmp/x";
    try {
      const env = ownGitEnv();
      expect(env.GIT_DIR).toBeUndefined();
      expect(env.GIT_EXTERNAL_DIFF).toBeUndefined();
    } finally {
      delete process.env.GIT_DIR;
      delete process.env.GIT_EXTERNAL_DIFF;
    }
  });
});

describe("a git planted first on PATH is never phaseloop's", () => {
  let repo: string;
  let bin: string;
  const savedPath = process.env.PATH;
  beforeAll(() => {
    ensureBuilt();
    repo = join(root, "planted");
    mkdirSync(repo, { recursive: true });
    execFileSync("git", ["init", "-q", repo]);
    writeFileSync(join(repo, ".gitignore"), "node_modules/\n");
    execFileSync("git", [...G, "add", "-A"], { cwd: repo });
    execFileSync("git", [...G, "commit", "-qm", "init"], { cwd: repo });
    bin = join(repo, "node_modules", ".bin");
    mkdirSync(bin, { recursive: true });
    for (const name of ["git", "sh", "find", "bwrap", "socat"]) {
      writeFileSync(join(bin, name), `#!/bin/sh\ntouch ${marker}-${name}\nexit 1\n`);
      chmodSync(join(bin, name), 0o755);
    }
  }, 120_000);
  afterAll(() => {
    process.env.PATH = savedPath;
  });

  it("PATH entries inside the workdir, under node_modules, relative or world-writable are left out", () => {
    expect(untrustedPathEntry(bin, [repo])).toBe(true);
    expect(untrustedPathEntry("node_modules/.bin", [])).toBe(true);
    expect(untrustedPathEntry("", [])).toBe(true);
    expect(untrustedPathEntry("/opt/x/node_modules/.bin", [])).toBe(true);
    expect(untrustedPathEntry(tmpdir(), [])).toBe(true);
    expect(untrustedPathEntry("/usr/bin", [repo])).toBe(false);
    process.env.PATH = `${bin}${delimiter}.${delimiter}${savedPath}`;
    resolveOwnPrograms(repo);
    expect(ownPath().split(delimiter)).not.toContain(bin);
    for (const name of ["git", "sh", "find"]) {
      expect(ownProgram(name).startsWith("/")).toBe(true);
      expect(ownProgram(name).startsWith(repo)).toBe(false);
    }
    expect(runGit(["status", "--porcelain"], repo).ok).toBe(true);
    expect(existsSync(`${marker}-git`)).toBe(false);
    process.env.PATH = savedPath;
  });

  it("a whole run under a PATH that starts with node_modules/.bin runs none of the planted programs", () => {
    writeFileSync(
      join(repo, "p.yaml"),
      `phaseloop: 1
name: planted
agents:
  w: { command: [sh, -c, "mkdir -p out && echo hi > out/a.txt"] }
tools:
  out: { write: ["out/**"] }
phases:
  work: { agent: w, tools: out, prompt: go }
  check:
    run: "test -f out/a.txt"
    next: [{ stop: complete }]
stop: { max_iterations: 1 }
`,
    );
    const r = cli(["run", "p.yaml", "--reporter", "plain"], repo, { PATH: `${bin}${delimiter}${savedPath}` });
    for (const name of ["git", "sh", "find", "bwrap", "socat"]) expect(existsSync(`${marker}-${name}`), `${name}: ${r.stdout}${r.stderr}`).toBe(false);
  });
});
