import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { gitInternalsChanged, snapshotGitInternals } from "../../src/changes/git-internals.ts";

describe("the repository's own files, seen from a linked worktree", () => {
  const root = mkdtempSync(join(tmpdir(), "pl-internals-"));
  const common = join(root, "repo", ".git");
  const own = join(common, "worktrees", "lane");
  mkdirSync(join(common, "hooks"), { recursive: true });
  mkdirSync(join(common, "refs", "heads"), { recursive: true });
  mkdirSync(own, { recursive: true });
  writeFileSync(join(common, "HEAD"), "ref: refs/heads/main\n");
  writeFileSync(join(common, "config"), "[core]\n");
  writeFileSync(join(own, "HEAD"), "ref: refs/heads/lane\n");
  const dirs = [own, common];

  it("leaves what every checkout shares to the checkout that changes it, lock files included; config, hooks and its own HEAD stay watched", () => {
    const before = snapshotGitInternals(nodeHost.files, dirs);
    // another checkout merges: git holds HEAD.lock, index.lock and a ref's lock while it writes them
    for (const name of ["HEAD.lock", "index.lock", "ORIG_HEAD", "ORIG_HEAD.lock", "packed-refs.lock", "AUTO_MERGE.lock"]) writeFileSync(join(common, name), "x\n");
    writeFileSync(join(common, "refs", "heads", "main.lock"), "x\n");
    expect(gitInternalsChanged(nodeHost.files, before, dirs)).toEqual([]);
    // what git runs or obeys here too is still this workdir's business
    writeFileSync(join(common, "config.lock"), "[core]\n");
    writeFileSync(join(common, "hooks", "pre-commit"), "#!/bin/sh\n");
    writeFileSync(join(own, "HEAD.lock"), "x\n");
    expect(gitInternalsChanged(nodeHost.files, before, dirs).sort()).toEqual([join(common, "config.lock"), join(common, "hooks", "pre-commit"), join(own, "HEAD.lock")].sort());
  });
});
