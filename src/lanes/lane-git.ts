/**
 * The git work of lanes, done by phaseloop itself (never by an agent, whose
 * sandbox cannot write the repository): worktrees and branches, the lane's
 * commit, the merge into the target branch, the rebase after a conflict.
 * Commits are made as "phaseloop" through the environment; the user's git
 * config and hooks are neither changed nor run.
 */
import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { ownGitEnv, ownGitSpawn, ownGitSync, ownGitWords } from "../host/own-git.ts";
import { ownProgram } from "../host/own-programs.ts";

/** Settings for phaseloop's own commands beyond own-git's: no stash around a merge or rebase. */
const SAFE = ["-c", "merge.autoStash=false", "-c", "rebase.autoStash=false"];

const IDENTITY = { GIT_AUTHOR_NAME: "phaseloop", GIT_AUTHOR_EMAIL: "phaseloop@localhost", GIT_COMMITTER_NAME: "phaseloop", GIT_COMMITTER_EMAIL: "phaseloop@localhost", GIT_TERMINAL_PROMPT: "0", GIT_EDITOR: "true" };

export interface Git {
  ok: boolean;
  out: string;
  err: string;
}

// a lane's git runs in its own worktree: own-git drops the parent's GIT_* variables that would send it elsewhere
const envOf = (): Record<string, string | undefined> => IDENTITY;

/** git, waited for: only before the lanes start (their loops must not wait on it). */
export function gitSync(cwd: string, ...args: string[]): Git {
  const r = ownGitSync([...SAFE, ...args], { cwd, env: envOf(), maxBuffer: 256 * 1024 * 1024 });
  return { ok: r.status === 0, out: (r.stdout ?? "").trimEnd(), err: (r.stderr ?? "").trim() || (r.error ? String(r.error.message) : "") };
}

/**
 * One git at a time: phaseloop's commands share the repository's refs and
 * worktree records; run one after another they never race each other, and
 * run asynchronously they never hold up the lanes' loops. Tidying (a merged
 * lane's worktree and branch) waits until nothing else is queued, so that a
 * merge and the next lane's start come first.
 */
let queue: Promise<unknown> = Promise.resolve();
let pending = 0;
const later: (() => Promise<unknown>)[] = [];

function exec(cwd: string, args: string[]): Promise<Git> {
  return new Promise<Git>((resolveGit) => {
    // a group of its own: Ctrl-C at the terminal stops the lanes, not a merge half done
    const child = ownGitSpawn([...SAFE, ...args], { cwd, env: envOf(), detached: true });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", (e) => resolveGit({ ok: false, out: "", err: e.message }));
    child.on("close", (code) => resolveGit({ ok: code === 0, out: out.trimEnd(), err: err.trim() }));
  });
}

function enqueue<T>(job: () => Promise<T>): Promise<T> {
  pending++;
  const next = queue.then(job, job).finally(() => {
    pending--;
    if (pending === 0) startLater();
  });
  queue = next.catch(() => undefined);
  return next;
}

function startLater(): void {
  const job = later.shift();
  if (job) void enqueue(job);
}

export function git(cwd: string, ...args: string[]): Promise<Git> {
  return enqueue(() => exec(cwd, args));
}

const quote = (a: string): string => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", "'\\''")}'`);

/**
 * git commands one after another while each succeeds, in one shell: one
 * process for phaseloop to start instead of several (starting one costs the
 * most here). `ok` when all succeeded; `out` is the last one's output.
 */
function chain(cwd: string, commands: string[][]): Promise<Git> {
  const script = commands.map((args) => ownGitWords([...SAFE, ...args]).map(quote).join(" ")).join(" && ");
  return new Promise<Git>((resolveGit) => {
    const child = spawn(ownProgram("sh"), ["-c", script], { cwd, env: ownGitEnv(envOf()) as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", (e) => resolveGit({ ok: false, out: "", err: e.message }));
    child.on("close", (code) => resolveGit({ ok: code === 0, out: out.trimEnd(), err: err.trim() }));
  });
}

export function gitChain(cwd: string, ...commands: string[][]): Promise<Git> {
  return enqueue(() => chain(cwd, commands));
}

/** Work that can wait until nothing else is queued (its git calls go through `run`, not the queue). */
export function gitLater(job: (run: (cwd: string, ...args: string[]) => Promise<Git>, runChain: (cwd: string, ...commands: string[][]) => Promise<Git>) => Promise<unknown>): void {
  later.push(() => job((cwd, ...args) => exec(cwd, args), (cwd, ...commands) => chain(cwd, commands)));
  if (pending === 0) startLater();
}

/** Once every queued git command, tidying included, has run. */
export async function gitSettled(): Promise<void> {
  while (pending > 0 || later.length > 0) {
    if (pending === 0) startLater();
    await queue;
  }
}

/** The repository at `workdir`: its top, the branch checked out (null when detached), HEAD, and the tracked files changed. */
export function readRepo(workdir: string): { root: string; branch: string | null; head: string | null; dirty: string[] } | undefined {
  const top = gitSync(workdir, "rev-parse", "--show-toplevel");
  if (!top.ok) return undefined;
  const branch = gitSync(workdir, "symbolic-ref", "--quiet", "--short", "HEAD");
  const head = gitSync(workdir, "rev-parse", "--verify", "--quiet", "HEAD");
  const status = gitSync(workdir, "status", "--porcelain=v1", "--untracked-files=no", "--ignore-submodules=all");
  const dirty = status.out.split("\n").filter(Boolean).map((l) => l.slice(3));
  return { root: top.out, branch: branch.ok ? branch.out : null, head: head.ok ? head.out : null, dirty };
}

export async function revParse(cwd: string, rev: string): Promise<string | null> {
  const r = await git(cwd, "rev-parse", "--verify", "--quiet", `${rev}^{commit}`);
  return r.ok ? r.out : null;
}

export async function branchExists(cwd: string, branch: string): Promise<boolean> {
  return (await git(cwd, "show-ref", "--verify", "--quiet", `refs/heads/${branch}`)).ok;
}

/**
 * A worktree at `path` on `branch`: a new branch from `base`, or the branch
 * as it is when it exists (a lane set up again after a crash). A worktree
 * already there and on the branch is kept.
 */
export async function addWorktree(repo: string, path: string, branch: string, base: string): Promise<Git> {
  if (existsSync(path)) {
    if ((await git(path, "symbolic-ref", "--quiet", "--short", "HEAD")).out === branch) return { ok: true, out: "", err: "" };
    rmSync(path, { recursive: true, force: true });
    await git(repo, "worktree", "prune");
  }
  const made = await git(repo, "worktree", "add", "--quiet", "-b", branch, path, base);
  // the branch is there already: a lane set up again after a crash
  if (!made.ok && (await branchExists(repo, branch))) {
    await git(repo, "worktree", "prune");
    return git(repo, "worktree", "add", "--quiet", path, branch);
  }
  return made;
}

/** Remove a worktree (its files and git's record of it); its branch stays. */
export async function removeWorktree(repo: string, path: string, run = git): Promise<void> {
  const r = await run(repo, "worktree", "remove", "--force", "--force", path);
  if (r.ok && !existsSync(path)) return;
  rmSync(path, { recursive: true, force: true });
  await run(repo, "worktree", "prune");
}

/** Commit everything the lane changed as one commit; whether there was anything to commit. */
export async function commitAll(worktree: string, message: string): Promise<{ ok: true; committed: boolean } | { ok: false; message: string }> {
  // a gitlink's repository would be asked for its status by `git add`, running its own filters: left out
  const links = (await git(worktree, "ls-files", "-s", "-z")).out.split("\0").filter((e) => e.startsWith("160000 ")).map((e) => `:(exclude,literal)${e.slice(e.indexOf("\t") + 1)}`);
  const c = await gitChain(worktree, ["add", "--all", "--", ".", ...links], ["commit", "--quiet", "--no-verify", "-m", message]);
  if (c.ok) return { ok: true, committed: true };
  // nothing staged: git says so and exits 1
  if ((await git(worktree, "diff", "--no-ext-diff", "--no-textconv", "--cached", "--quiet")).ok) return { ok: true, committed: false };
  return { ok: false, message: `git commit failed: ${c.err || c.out}` };
}

export type MergeResult = { kind: "merged"; commit: string } | { kind: "conflict"; files: string[] } | { kind: "failed"; message: string };

/** Merge `branch` into the branch checked out at `targetDir` (a merge commit, or nothing to do when it is already in). */
/**
 * Merge `branch` into the branch checked out at `targetDir`. `amend`, before the merge is
 * committed, changes files of the merged result and names one to commit with it.
 */
export async function mergeBranch(targetDir: string, branch: string, message: string, amend?: () => string | undefined): Promise<MergeResult> {
  // a branch merged already (before a crash) is "Already up to date": no new commit
  const m = amend ? await git(targetDir, "merge", "--quiet", "--no-ff", "--no-verify", "--no-commit", branch) : await gitChain(targetDir, ["merge", "--quiet", "--no-ff", "--no-verify", "--no-edit", "-m", message, branch], ["rev-parse", "HEAD"]);
  if (m.ok && amend) {
    const file = amend();
    const c = await gitChain(targetDir, ["add", "--", ...(file ? [file] : [])], ["commit", "--quiet", "--no-verify", "--allow-empty", "-m", message], ["rev-parse", "HEAD"]);
    if (c.ok) return { kind: "merged", commit: c.out.split("\n").at(-1) ?? "" };
    await git(targetDir, "merge", "--abort");
    return { kind: "failed", message: (c.err || c.out).split("\n").slice(0, 3).join(" ") };
  }
  if (m.ok) return { kind: "merged", commit: m.out.split("\n").at(-1) ?? "" };
  const files = await unmerged(targetDir);
  await git(targetDir, "merge", "--abort");
  if (files.length > 0) return { kind: "conflict", files };
  return { kind: "failed", message: (m.err || m.out).split("\n").slice(0, 3).join(" ") };
}

/** Rebase the lane's branch (checked out in `worktree`) onto `onto`. */
export async function rebaseOnto(worktree: string, onto: string): Promise<MergeResult> {
  const r = await git(worktree, "rebase", "--quiet", "--no-verify", onto);
  if (r.ok) return { kind: "merged", commit: (await revParse(worktree, "HEAD")) ?? "" };
  const files = await unmerged(worktree);
  await git(worktree, "rebase", "--abort");
  if (files.length > 0) return { kind: "conflict", files };
  return { kind: "failed", message: (r.err || r.out).split("\n").slice(0, 3).join(" ") };
}

async function unmerged(cwd: string): Promise<string[]> {
  return (await git(cwd, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "--diff-filter=U")).out.split("\n").filter(Boolean);
}

export async function deleteBranch(repo: string, branch: string, run = git): Promise<void> {
  await run(repo, "branch", "--quiet", "-D", branch);
}
