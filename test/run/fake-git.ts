/**
 * A git for the memory host's `git` option: just enough of a repository for
 * parallel lanes (branches and their heads, worktrees as folders of the host,
 * commits, merges that conflict when told, rebases), answering the commands
 * lanes/lane-git.ts runs. Every command is recorded. It lives beside the
 * files, like a real repository: a crash of phaseloop does not undo what git
 * did, and once phaseloop has crashed it starts no more git.
 */
import { HostCrash, type GitScript, type MemoryHost } from "../../src/host/memory-host.ts";
import type { GitResult } from "../../src/host/host.ts";

export interface FakeGit {
  script: GitScript;
  /** Each command: where it ran and its arguments (phaseloop's `-c` settings left out). */
  calls: { cwd: string; args: string[] }[];
  /** The branches merged into the target, in order. */
  merged: string[];
  branches: Map<string, string>;
  worktrees: Map<string, string>;
}

const ok = (stdout = ""): GitResult => ({ status: 0, stdout, stderr: "" });
const fail = (status: number, stderr: string, stdout = ""): GitResult => ({ status, stdout, stderr });

/**
 * A repository at `repo` on branch `main`. Merging a branch whose name ends
 * with one of `conflicts` conflicts on `shared.txt` until the branch has been
 * rebased as many times as that task's name is listed (as a real conflict, it
 * comes again after a crash, until a rebase resolved it).
 */
export function fakeGit(repo: string, conflicts: string[] = []): FakeGit {
  const branches = new Map([["main", "c0"]]);
  const worktrees = new Map([[repo, "main"]]);
  const calls: FakeGit["calls"] = [];
  const merged: string[] = [];
  const rebased = new Map<string, number>();
  let commits = 0;
  let unmerged: string[] = [];
  const mergedHeads = new Set<string>();
  const committed = new Set<string>();
  const commit = (branch: string) => {
    const sha = `c${++commits}`;
    branches.set(branch, sha);
    return sha;
  };

  const script: GitScript = (all, { cwd }, host: MemoryHost) => {
    if (host.crashed) throw new HostCrash(host.writes);
    const args = [...all];
    while (args[0] === "-c") args.splice(0, 2);
    calls.push({ cwd, args });
    const branch = worktrees.get(cwd);
    const line = args.join(" ");
    const resolve = (rev: string) => (rev === "HEAD" ? (branch && branches.get(branch)) : branches.get(rev));
    if (line === "rev-parse --show-toplevel") return branch ? ok(`${repo}\n`) : fail(128, "fatal: not a git repository");
    if (line === "symbolic-ref --quiet --short HEAD") return branch ? ok(`${branch}\n`) : fail(1, "");
    if (args[0] === "rev-parse" && args.includes("--git-path")) return ok(`${cwd}/.git/${args.at(-1)}\n`);
    if (line === "rev-parse --quiet --verify MERGE_HEAD") return fail(1, "");
    if (args[0] === "rev-parse") {
      const sha = resolve(args.at(-1)!.replace("^{commit}", ""));
      return sha ? ok(`${sha}\n`) : fail(1, "");
    }
    if (line.startsWith("status --porcelain")) return ok("");
    if (args[0] === "show-ref") return branches.has(args.at(-1)!.replace("refs/heads/", "")) ? ok() : fail(1, "");
    if (args[0] === "worktree" && args[1] === "add") {
      const rest = args.slice(args.indexOf("--quiet") + 1);
      if (rest[0] === "-b") {
        const [, name, path, base] = rest as [string, string, string, string];
        if (branches.has(name)) return fail(128, `fatal: a branch named '${name}' already exists`);
        branches.set(name, resolve(base) ?? base);
        worktrees.set(path, name);
        host.files.mkdir(path);
        return ok();
      }
      const [path, name] = rest as [string, string];
      worktrees.set(path, name);
      host.files.mkdir(path);
      return ok();
    }
    if (line === "worktree prune") {
      for (const path of worktrees.keys()) if (path !== repo && !host.files.exists(path)) worktrees.delete(path);
      return ok();
    }
    if (args[0] === "worktree" && args[1] === "remove") {
      const path = args.at(-1)!;
      worktrees.delete(path);
      host.files.remove(path, { recursive: true, force: true });
      return ok();
    }
    if (args[0] === "branch" && args.includes("-D")) {
      const name = args.at(-1)!;
      if (!branches.delete(name)) return fail(1, `error: branch '${name}' not found.`);
      return ok();
    }
    if (line === "ls-files -s -z") return ok("");
    if (args[0] === "add") return ok();
    if (args[0] === "commit") {
      if (!branch) return fail(128, "fatal: not a git repository");
      // a lane's work is committed once: after that (a merge repeated after a crash, a rebase) its worktree is clean
      if (branch !== "main" && committed.has(branch)) return fail(1, "", "nothing to commit, working tree clean\n");
      committed.add(branch);
      commit(branch);
      return ok();
    }
    if (line === "diff --no-ext-diff --no-textconv --cached --quiet") return ok();
    if (line === "diff --no-ext-diff --no-textconv --name-only --diff-filter=U") return ok(unmerged.map((f) => `${f}\n`).join(""));
    if (args[0] === "merge" && args[1] === "--abort") {
      unmerged = [];
      return ok();
    }
    if (args[0] === "merge") {
      const name = args.at(-1)!;
      if (!branches.has(name)) return fail(1, `merge: ${name} - not something we can merge`);
      // merged before (a crash came before phaseloop recorded it): nothing to do
      if (mergedHeads.has(branches.get(name)!)) return ok("Already up to date.\n");
      const listed = conflicts.filter((t) => name.endsWith(`/${t}`)).length;
      if ((rebased.get(name) ?? 0) < listed) {
        unmerged = ["shared.txt"];
        return fail(1, "Automatic merge failed; fix conflicts and then commit the result.", "CONFLICT (content): Merge conflict in shared.txt\n");
      }
      merged.push(name);
      mergedHeads.add(branches.get(name)!);
      commit(branch!);
      return ok();
    }
    // the lane's branch holds its target's commit once it was rebased onto it
    if (args[0] === "merge-base" && args[1] === "--is-ancestor") return branch && (rebased.get(branch) ?? 0) > 0 ? ok() : fail(1, "");
    if (args[0] === "rebase") {
      if (args[1] === "--abort") return ok();
      rebased.set(branch!, (rebased.get(branch!) ?? 0) + 1);
      commit(branch!);
      return ok();
    }
    return fail(1, `fake git: unknown command: git ${line}`);
  };
  return { script, calls, merged, branches, worktrees };
}
