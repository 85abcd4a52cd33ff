/**
 * The git work of lanes, done by phaseloop itself (never by an agent, whose
 * sandbox cannot write the repository): worktrees and branches, the lane's
 * commit, the merge into the target branch, the rebase after a conflict.
 * Commits are made as "phaseloop" through the environment; the user's git
 * config and hooks are neither changed nor run.
 */
import type { GitResult, Host } from "../host/host.ts";

/** Settings for phaseloop's own commands beyond own-git's: no stash around a merge or rebase. */
const SAFE = ["-c", "merge.autoStash=false", "-c", "rebase.autoStash=false"];

// a lane's git runs in its own worktree: own-git drops the parent's GIT_* variables that would send it elsewhere
const IDENTITY = { GIT_AUTHOR_NAME: "phaseloop", GIT_AUTHOR_EMAIL: "phaseloop@localhost", GIT_COMMITTER_NAME: "phaseloop", GIT_COMMITTER_EMAIL: "phaseloop@localhost", GIT_TERMINAL_PROMPT: "0", GIT_EDITOR: "true" };

export interface Git {
  ok: boolean;
  out: string;
  err: string;
}

/** A git command run to its end, from `cwd`. */
export type GitRun = (cwd: string, ...args: string[]) => Promise<Git>;

const answer = (r: GitResult): Git => ({ ok: r.status === 0, out: r.stdout.trimEnd(), err: r.stderr.trim() });

/** git, waited for: only before the lanes start (their loops must not wait on it). */
export function gitSync(host: Host, cwd: string, ...args: string[]): Git {
  return answer(host.git.run([...SAFE, ...args], { cwd, env: IDENTITY, maxBuffer: 256 * 1024 * 1024 }));
}

/**
 * One git at a time: phaseloop's commands share the repository's refs and
 * worktree records; run one after another they never race each other, and
 * run asynchronously they never hold up the lanes' loops. Tidying (a merged
 * lane's worktree and branch) waits until nothing else is queued, so that a
 * merge and the next lane's start come first. One queue per host.
 */
interface GitQueue {
  tail: Promise<unknown>;
  pending: number;
  later: (() => Promise<unknown>)[];
}

const queues = new WeakMap<Host, GitQueue>();

function queueOf(host: Host): GitQueue {
  let q = queues.get(host);
  if (!q) queues.set(host, (q = { tail: Promise.resolve(), pending: 0, later: [] }));
  return q;
}

// a group of its own (the host's `start`): Ctrl-C at the terminal stops the lanes, not a merge half done
const exec = (host: Host, cwd: string, args: string[]): Promise<Git> => host.git.start([...SAFE, ...args], { cwd, env: IDENTITY }).then(answer);

/**
 * git commands one after another while each succeeds, in one shell: one
 * process for phaseloop to start instead of several (starting one costs the
 * most here). `ok` when all succeeded; `out` is the last one's output.
 */
const chain = (host: Host, cwd: string, commands: string[][]): Promise<Git> => host.git.startAll(commands.map((args) => [...SAFE, ...args]), { cwd, env: IDENTITY }).then(answer);

function enqueue<T>(host: Host, job: () => Promise<T>): Promise<T> {
  const q = queueOf(host);
  q.pending++;
  const next = q.tail.then(job, job).finally(() => {
    q.pending--;
    if (q.pending === 0) startLater(host);
  });
  q.tail = next.catch(() => undefined);
  return next;
}

function startLater(host: Host): void {
  const job = queueOf(host).later.shift();
  if (job) void enqueue(host, job);
}

export function git(host: Host, cwd: string, ...args: string[]): Promise<Git> {
  return enqueue(host, () => exec(host, cwd, args));
}

export function gitChain(host: Host, cwd: string, ...commands: string[][]): Promise<Git> {
  return enqueue(host, () => chain(host, cwd, commands));
}

/** Work that can wait until nothing else is queued (its git calls go through `run`, not the queue). */
export function gitLater(host: Host, job: (run: GitRun, runChain: (cwd: string, ...commands: string[][]) => Promise<Git>) => Promise<unknown>): void {
  const q = queueOf(host);
  q.later.push(() => job((cwd, ...args) => exec(host, cwd, args), (cwd, ...commands) => chain(host, cwd, commands)));
  if (q.pending === 0) startLater(host);
}

/** Once every queued git command, tidying included, has run. */
export async function gitSettled(host: Host): Promise<void> {
  const q = queueOf(host);
  while (q.pending > 0 || q.later.length > 0) {
    if (q.pending === 0) startLater(host);
    await q.tail;
  }
}

/** The repository at `workdir`: its top, the branch checked out (null when detached), HEAD, and the tracked files changed. */
export function readRepo(host: Host, workdir: string): { root: string; branch: string | null; head: string | null; dirty: string[] } | undefined {
  const top = gitSync(host, workdir, "rev-parse", "--show-toplevel");
  if (!top.ok) return undefined;
  const branch = gitSync(host, workdir, "symbolic-ref", "--quiet", "--short", "HEAD");
  const head = gitSync(host, workdir, "rev-parse", "--verify", "--quiet", "HEAD");
  const status = gitSync(host, workdir, "status", "--porcelain=v1", "--untracked-files=no", "--ignore-submodules=all");
  const dirty = status.out.split("\n").filter(Boolean).map((l) => l.slice(3));
  return { root: top.out, branch: branch.ok ? branch.out : null, head: head.ok ? head.out : null, dirty };
}

export async function revParse(host: Host, cwd: string, rev: string): Promise<string | null> {
  const r = await git(host, cwd, "rev-parse", "--verify", "--quiet", `${rev}^{commit}`);
  return r.ok ? r.out : null;
}

export async function branchExists(host: Host, cwd: string, branch: string): Promise<boolean> {
  return (await git(host, cwd, "show-ref", "--verify", "--quiet", `refs/heads/${branch}`)).ok;
}

/**
 * A worktree at `path` on `branch`: a new branch from `base`, or the branch
 * as it is when it exists (a lane set up again after a crash). A worktree
 * already there and on the branch is kept.
 */
export async function addWorktree(host: Host, repo: string, path: string, branch: string, base: string): Promise<Git> {
  if (host.files.exists(path)) {
    if ((await git(host, path, "symbolic-ref", "--quiet", "--short", "HEAD")).out === branch) return { ok: true, out: "", err: "" };
    host.files.remove(path, { recursive: true, force: true });
    await git(host, repo, "worktree", "prune");
  }
  const made = await git(host, repo, "worktree", "add", "--quiet", "-b", branch, path, base);
  // the branch is there already: a lane set up again after a crash
  if (!made.ok && (await branchExists(host, repo, branch))) {
    await git(host, repo, "worktree", "prune");
    return git(host, repo, "worktree", "add", "--quiet", path, branch);
  }
  return made;
}

/** Remove a worktree (its files and git's record of it); its branch stays. */
export async function removeWorktree(host: Host, repo: string, path: string, run: GitRun = (cwd, ...args) => git(host, cwd, ...args)): Promise<void> {
  const r = await run(repo, "worktree", "remove", "--force", "--force", path);
  if (r.ok && !host.files.exists(path)) return;
  host.files.remove(path, { recursive: true, force: true });
  await run(repo, "worktree", "prune");
}

/** Commit everything the lane changed as one commit; whether there was anything to commit. */
export async function commitAll(host: Host, worktree: string, message: string): Promise<{ ok: true; committed: boolean } | { ok: false; message: string }> {
  // a gitlink's repository would be asked for its status by `git add`, running its own filters: left out
  const links = (await git(host, worktree, "ls-files", "-s", "-z")).out.split("\0").filter((e) => e.startsWith("160000 ")).map((e) => `:(exclude,literal)${e.slice(e.indexOf("\t") + 1)}`);
  const c = await gitChain(host, worktree, ["add", "--all", "--", ".", ...links], ["commit", "--quiet", "--no-verify", "-m", message]);
  if (c.ok) return { ok: true, committed: true };
  // nothing staged: git says so and exits 1
  if ((await git(host, worktree, "diff", "--no-ext-diff", "--no-textconv", "--cached", "--quiet")).ok) return { ok: true, committed: false };
  return { ok: false, message: `git commit failed: ${c.err || c.out}` };
}

export type MergeResult = { kind: "merged"; commit: string } | { kind: "conflict"; files: string[] } | { kind: "failed"; message: string };

/**
 * Merge `branch` into the branch checked out at `targetDir`. `amend`, before the merge is
 * committed, changes files of the merged result and names one to commit with it.
 */
export async function mergeBranch(host: Host, targetDir: string, branch: string, message: string, amend?: () => string | undefined): Promise<MergeResult> {
  // a branch merged already (before a crash) is "Already up to date": no new commit
  const m = amend ? await git(host, targetDir, "merge", "--quiet", "--no-ff", "--no-verify", "--no-commit", branch) : await gitChain(host, targetDir, ["merge", "--quiet", "--no-ff", "--no-verify", "--no-edit", "-m", message, branch], ["rev-parse", "HEAD"]);
  if (m.ok && amend) {
    const file = amend();
    const c = await gitChain(host, targetDir, ["add", "--", ...(file ? [file] : [])], ["commit", "--quiet", "--no-verify", "--allow-empty", "-m", message], ["rev-parse", "HEAD"]);
    if (c.ok) return { kind: "merged", commit: c.out.split("\n").at(-1) ?? "" };
    await git(host, targetDir, "merge", "--abort");
    return { kind: "failed", message: (c.err || c.out).split("\n").slice(0, 3).join(" ") };
  }
  if (m.ok) return { kind: "merged", commit: m.out.split("\n").at(-1) ?? "" };
  const files = await unmerged(host, targetDir);
  await git(host, targetDir, "merge", "--abort");
  if (files.length > 0) return { kind: "conflict", files };
  return { kind: "failed", message: (m.err || m.out).split("\n").slice(0, 3).join(" ") };
}

/**
 * Rebase the lane's branch (checked out in `worktree`) onto `onto`. Rebased, it is answered at
 * once: the run records it before any other git work is done (a crash in between would leave a
 * rebased branch the run does not know to verify again).
 */
export async function rebaseOnto(host: Host, worktree: string, onto: string): Promise<{ kind: "rebased" } | Exclude<MergeResult, { kind: "merged" }>> {
  const r = await git(host, worktree, "rebase", "--quiet", "--no-verify", onto);
  if (r.ok) return { kind: "rebased" };
  const files = await unmerged(host, worktree);
  await git(host, worktree, "rebase", "--abort");
  if (files.length > 0) return { kind: "conflict", files };
  return { kind: "failed", message: (r.err || r.out).split("\n").slice(0, 3).join(" ") };
}

/** Whether the branch checked out in `worktree` holds `onto`'s commit (it was rebased onto it, or begun from it since). */
export async function holds(host: Host, worktree: string, onto: string): Promise<boolean> {
  return (await git(host, worktree, "merge-base", "--is-ancestor", onto, "HEAD")).ok;
}

async function unmerged(host: Host, cwd: string): Promise<string[]> {
  return (await git(host, cwd, "diff", "--no-ext-diff", "--no-textconv", "--name-only", "--diff-filter=U")).out.split("\n").filter(Boolean);
}

export async function deleteBranch(host: Host, repo: string, branch: string, run: GitRun = (cwd, ...args) => git(host, cwd, ...args)): Promise<void> {
  await run(repo, "branch", "--quiet", "-D", branch);
}
