/**
 * Measured progress: which files changed in the workdir between two moments,
 * never what the agent claims. In git, a baseline is a tree object of the
 * working tree (untracked files included, .gitignore honoured) written through a
 * private index, so the user's index is never touched; elsewhere it is a file
 * snapshot. Each baseline is compared with the present, not with HEAD: changes
 * from earlier iterations do not count again.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import process from "node:process";

const SKIP_DIRS = new Set([".git", "node_modules", ".phaseloop"]);
const HASH_LIMIT = 8 * 1024 * 1024;

export type Baseline =
  | { kind: "git"; tree: string; root: string; prefix: string }
  | { kind: "snapshot"; files: Record<string, string> };

function git(args: string[], cwd: string, env?: Record<string, string>): { ok: boolean; out: string } {
  const r = spawnSync("git", args, { cwd, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  return { ok: r.status === 0, out: r.stdout ?? "" };
}

/** The repository root and the workdir's path inside it, or undefined outside git. */
export function gitRootOf(workdir: string): { root: string; prefix: string } | undefined {
  const r = git(["rev-parse", "--show-toplevel", "--show-prefix"], workdir);
  if (!r.ok) return undefined;
  const [root, prefix] = r.out.split("\n");
  if (!root) return undefined;
  return { root, prefix: prefix ?? "" };
}

function writeWorktree(root: string, prefix: string): string | undefined {
  const index = join(tmpdir(), `phaseloop-index-${process.pid}-${Math.random().toString(36).slice(2)}`);
  try {
    const env = { GIT_INDEX_FILE: index };
    // start from HEAD's tree when there is one: `add` then only hashes what changed
    git(["read-tree", "HEAD"], root, env);
    const pathspec = prefix ? [prefix] : ["."];
    const add = git(["add", "-A", "--", ...pathspec, `:(exclude)${prefix}.phaseloop`], root, env);
    if (!add.ok) return undefined;
    const tree = git(["write-tree"], root, env);
    return tree.ok ? tree.out.trim() : undefined;
  } finally {
    rmSync(index, { force: true });
  }
}

/**
 * Content hashes by absolute path, with the stat they were taken under. A file
 * whose size, times and inode are unchanged is not read again; as git does
 * with its index, a file changed in the last second is never trusted this
 * way (file times are coarse, and two same-size writes within one tick look
 * alike), and any write changes ctime, which no program can set back.
 */
const hashCache = new Map<string, { key: string; hash: string }>();
const SETTLED_MS = 1000;

function contentHash(path: string, st: { size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  const key = `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
  const hit = hashCache.get(path);
  if (hit?.key === key) return hit.hash;
  const hash = createHash("sha1").update(readFileSync(path)).digest("hex");
  const settled = Date.now() - SETTLED_MS;
  if (st.mtimeMs < settled && st.ctimeMs < settled) hashCache.set(path, { key, hash });
  else hashCache.delete(path);
  return hash;
}

function snapshot(workdir: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = join(dir, e.name);
      if (e.isDirectory()) {
        if (!SKIP_DIRS.has(e.name)) walk(full);
        continue;
      }
      const rel = relative(workdir, full).split(sep).join("/");
      try {
        const st = lstatSync(full);
        if (e.isSymbolicLink()) files[rel] = `link:${st.mtimeMs}`;
        else if (st.size <= HASH_LIMIT) files[rel] = contentHash(full, st);
        else files[rel] = `${st.size}:${st.mtimeMs}`;
      } catch {
        // vanished while we looked
      }
    }
  };
  walk(workdir);
  return files;
}

export function takeBaseline(workdir: string): Baseline {
  const repo = gitRootOf(workdir);
  if (repo) {
    const tree = writeWorktree(repo.root, repo.prefix);
    if (tree) return { kind: "git", tree, root: repo.root, prefix: repo.prefix };
  }
  return { kind: "snapshot", files: snapshot(workdir) };
}

/** Files changed (added, modified, deleted) since the baseline, relative to the workdir, sorted. */
export function changesSince(workdir: string, baseline: Baseline): string[] {
  if (baseline.kind === "git") {
    const now = writeWorktree(baseline.root, baseline.prefix);
    if (!now) return [];
    if (now === baseline.tree) return [];
    const diff = git(["diff-tree", "-r", "--name-only", "-z", "--no-renames", baseline.tree, now], baseline.root);
    return diff.out
      .split("\0")
      .filter(Boolean)
      .filter((p) => p.startsWith(baseline.prefix))
      .map((p) => p.slice(baseline.prefix.length))
      .filter((p) => !p.startsWith(".phaseloop/"))
      .sort();
  }
  const now = snapshot(workdir);
  const changed = new Set<string>();
  for (const [p, h] of Object.entries(now)) if (baseline.files[p] !== h) changed.add(p);
  for (const p of Object.keys(baseline.files)) if (!(p in now)) changed.add(p);
  return [...changed].sort();
}

/**
 * Restore paths to their baseline; returns the paths it could not restore. In
 * git every path can be (the baseline is a tree); outside git the baseline
 * holds hashes, not contents, so only files created since can be undone (by
 * removing them).
 */
export function revertPaths(workdir: string, baseline: Baseline, paths: string[]): string[] {
  if (baseline.kind !== "git") {
    const failed: string[] = [];
    for (const p of paths) {
      if (baseline.files[p] !== undefined) {
        failed.push(p);
        continue;
      }
      try {
        rmSync(join(workdir, p), { force: true });
      } catch {
        failed.push(p);
      }
    }
    return failed;
  }
  const failed: string[] = [];
  for (const p of paths) {
    const inRepo = baseline.prefix + p;
    const exists = git(["cat-file", "-e", `${baseline.tree}:${inRepo}`], baseline.root).ok;
    if (!exists) {
      rmSync(join(workdir, p), { force: true, recursive: true });
      continue;
    }
    const blob = spawnSync("git", ["cat-file", "blob", `${baseline.tree}:${inRepo}`], { cwd: baseline.root, maxBuffer: 256 * 1024 * 1024 });
    if (blob.status !== 0) {
      failed.push(p);
      continue;
    }
    try {
      rmSync(join(workdir, p), { force: true, recursive: true });
      // write back the baseline content
      writeRestored(join(workdir, p), blob.stdout);
    } catch {
      failed.push(p);
    }
  }
  return failed;
}

function writeRestored(path: string, data: Uint8Array): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, data);
}
