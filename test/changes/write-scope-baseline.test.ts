import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { nodeHost } from "../../src/host/node-host.ts";
import { revertScope, scopeChangesSince, takeScopeBaseline } from "../../src/changes/write-scope-baseline.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const git = (cwd: string, ...args: string[]) => spawnSync("git", ["-c", "user.email=t@example.com", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });

function repo(): string {
  const d = mkdtempSync(join(tmpdir(), "phaseloop-scope-"));
  dirs.push(d);
  git(d, "init", "-q");
  writeFileSync(join(d, ".gitignore"), "*.log\nbuild/\n");
  mkdirSync(join(d, "src"));
  writeFileSync(join(d, "src", "a.ts"), "a");
  writeFileSync(join(d, "old.log"), "log");
  git(d, "add", "-A");
  git(d, "commit", "-qm", "init");
  return d;
}

describe("the write-scope baseline", () => {
  it("sees writes into .git (hooks, config, refs, info) as the repository's own files", () => {
    const d = repo();
    const base = takeScopeBaseline(nodeHost, d);
    writeFileSync(join(d, ".git", "hooks", "post-checkout"), "#!/bin/sh\ntouch PWNED\n");
    writeFileSync(join(d, ".git", "config"), readFileSync(join(d, ".git", "config"), "utf8") + "[core]\n\thooksPath = evil\n");
    writeFileSync(join(d, ".git", "info", "exclude"), "*\n");
    git(d, "branch", "side");
    const changes = scopeChangesSince(nodeHost, d, base);
    expect(changes.paths).toEqual([]);
    expect(changes.internals).toEqual(expect.arrayContaining([".git/config", ".git/hooks/post-checkout", ".git/info/exclude", ".git/refs/heads/side"]));
  });

  it("sees git-ignored files created, changed and removed, and untracked ones", () => {
    const d = repo();
    mkdirSync(join(d, "build"));
    writeFileSync(join(d, "build", "out.js"), "1");
    const base = takeScopeBaseline(nodeHost, d);
    writeFileSync(join(d, "build", "out.js"), "22");
    writeFileSync(join(d, "build", "new.js"), "x");
    rmSync(join(d, "old.log"));
    writeFileSync(join(d, "new.log"), "x");
    writeFileSync(join(d, "src", "b.ts"), "b");
    expect(scopeChangesSince(nodeHost, d, base)).toEqual({ paths: ["build/new.js", "build/out.js", "new.log", "old.log", "src/b.ts"], internals: [] });
  });

  it("does not count a refreshed index (a git status run by the agent) as a change", () => {
    const d = repo();
    const base = takeScopeBaseline(nodeHost, d);
    spawnSync("touch", [join(d, "src", "a.ts")]);
    git(d, "status");
    git(d, "update-index", "--refresh");
    expect(scopeChangesSince(nodeHost, d, base).internals).toEqual([]);
  });

  it("counts a commit made by the agent (refs, HEAD's log, the index)", () => {
    const d = repo();
    const base = takeScopeBaseline(nodeHost, d);
    writeFileSync(join(d, "src", "a.ts"), "changed");
    git(d, "commit", "-qam", "agent");
    const changes = scopeChangesSince(nodeHost, d, base);
    expect(changes.paths).toEqual(["src/a.ts"]);
    expect(changes.internals).toEqual(expect.arrayContaining([".git/index", ".git/refs/heads/" + git(d, "branch", "--show-current").stdout.trim()]));
  });

  it("reverts .git files from the baseline, with their mode, and removes created ones", () => {
    const d = repo();
    const hook = join(d, ".git", "hooks", "pre-commit");
    writeFileSync(hook, "#!/bin/sh\nexit 0\n");
    chmodSync(hook, 0o755);
    const config = readFileSync(join(d, ".git", "config"));
    const index = readFileSync(join(d, ".git", "index"));
    const head = git(d, "rev-parse", "HEAD").stdout;
    const base = takeScopeBaseline(nodeHost, d);
    writeFileSync(hook, "#!/bin/sh\ntouch PWNED\n");
    writeFileSync(join(d, ".git", "hooks", "post-checkout"), "#!/bin/sh\n");
    writeFileSync(join(d, ".git", "config"), "[core]\n\thooksPath = x\n");
    writeFileSync(join(d, "src", "a.ts"), "changed");
    git(d, "commit", "-qam", "agent");
    writeFileSync(join(d, "made.log"), "x");
    const changes = scopeChangesSince(nodeHost, d, base);
    const all = [...changes.paths, ...changes.internals];
    expect(revertScope(nodeHost, d, base, all)).toEqual([]);
    expect(readFileSync(hook, "utf8")).toBe("#!/bin/sh\nexit 0\n");
    expect(statSync(hook).mode & 0o777).toBe(0o755);
    expect(existsSync(join(d, ".git", "hooks", "post-checkout"))).toBe(false);
    expect(readFileSync(join(d, ".git", "config"))).toEqual(config);
    expect(readFileSync(join(d, ".git", "index"))).toEqual(index);
    expect(git(d, "rev-parse", "HEAD").stdout).toBe(head);
    expect(readFileSync(join(d, "src", "a.ts"), "utf8")).toBe("a");
    expect(existsSync(join(d, "made.log"))).toBe(false);
    expect(scopeChangesSince(nodeHost, d, base)).toEqual({ paths: [], internals: [] });
  });

  it("names an ignored file it cannot restore (only its stat was kept)", () => {
    const d = repo();
    const base = takeScopeBaseline(nodeHost, d);
    writeFileSync(join(d, "old.log"), "changed");
    expect(revertScope(nodeHost, d, base, scopeChangesSince(nodeHost, d, base).paths)).toEqual(["old.log"]);
  });

  it("outside git sees every file, node_modules included, and a .git an agent made", () => {
    const d = mkdtempSync(join(tmpdir(), "phaseloop-scope-"));
    dirs.push(d);
    mkdirSync(join(d, "node_modules", "x"), { recursive: true });
    writeFileSync(join(d, "node_modules", "x", "i.js"), "1");
    const base = takeScopeBaseline(nodeHost, d);
    writeFileSync(join(d, "node_modules", "x", "i.js"), "22");
    git(d, "init", "-q");
    const changes = scopeChangesSince(nodeHost, d, base);
    expect(changes.paths).toEqual(["node_modules/x/i.js"]);
    expect(changes.internals).toContain(".git/HEAD");
  });
});
