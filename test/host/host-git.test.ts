/**
 * The host's started git (`git.start`, `git.startAll`: what the lanes' git
 * work runs through) and `files.removeDir`, on the real host and in memory:
 * the same calls give the same answers.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GitResult, Host } from "../../src/host/host.ts";
import { MemoryHost } from "../../src/host/memory-host.ts";
import { nodeHost } from "../../src/host/node-host.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function repo(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "phaseloop-host-git-")));
  dirs.push(dir);
  spawnSync("git", ["init", "-q", "-b", "main"], { cwd: dir });
  return dir;
}

/** A git in memory that knows one repository at `root`: rev-parse answers, an unknown rev fails. */
const scripted = (root: string) =>
  new MemoryHost({
    cwd: root,
    git: (args, { cwd }): GitResult => {
      if (cwd !== root) return { status: 128, stdout: "", stderr: "fatal: not a git repository" };
      if (args.join(" ") === "rev-parse --is-inside-work-tree") return { status: 0, stdout: "true\n", stderr: "" };
      if (args.join(" ") === "rev-parse --show-toplevel") return { status: 0, stdout: `${root}\n`, stderr: "" };
      return { status: 1, stdout: "", stderr: "" };
    },
  });

async function exercise(host: Host, root: string): Promise<unknown[]> {
  const out: unknown[] = [];
  const top = await host.git.start(["rev-parse", "--show-toplevel"], { cwd: root, env: { GIT_AUTHOR_NAME: "phaseloop" } });
  out.push(top.status, top.stdout);
  // one after another while each succeeds: the output of those that ran, the status of the last
  const chain = await host.git.startAll([["rev-parse", "--is-inside-work-tree"], ["rev-parse", "--verify", "--quiet", "no-such-ref"], ["rev-parse", "--show-toplevel"]], { cwd: root });
  out.push(chain.status, chain.stdout);
  const all = await host.git.startAll([["rev-parse", "--is-inside-work-tree"], ["rev-parse", "--show-toplevel"]], { cwd: root });
  out.push(all.status, all.stdout);
  // removeDir removes an empty folder only
  const f = host.files;
  f.mkdir(join(root, "lanes/run"));
  f.writeText(join(root, "lanes/run/kept.txt"), "x");
  for (const path of [join(root, "lanes"), join(root, "lanes/run/kept.txt"), join(root, "nothing")]) {
    try {
      f.removeDir(path);
      out.push("removed");
    } catch (error) {
      out.push((error as NodeJS.ErrnoException).code);
    }
  }
  f.remove(join(root, "lanes/run/kept.txt"));
  f.removeDir(join(root, "lanes/run"));
  f.removeDir(join(root, "lanes"));
  out.push(f.exists(join(root, "lanes")));
  return out;
}

describe("the host's started git and removeDir", () => {
  it("answer alike on the real host and in memory", async () => {
    const dir = repo();
    const real = await exercise(nodeHost, dir);
    expect(real).toEqual([0, `${dir}\n`, 1, "true\n", 0, `true\n${dir}\n`, "ENOTEMPTY", "ENOTDIR", "ENOENT", false]);
    expect(await exercise(scripted(dir), dir)).toEqual(real);
  });

  it("never rejects: a git that cannot start answers status null and why", async () => {
    const r = await nodeHost.git.start(["status"], { cwd: join(tmpdir(), "phaseloop-no-such-folder") });
    expect(r.status).toBeNull();
    expect(r.stderr).toMatch(/ENOENT/);
    const all = await nodeHost.git.startAll([["status"]], { cwd: join(tmpdir(), "phaseloop-no-such-folder") });
    expect(all.status).toBeNull();
  });

  it("a memory host's git script neither counts as phaseloop's writes nor runs into its crash", async () => {
    const host = new MemoryHost({
      cwd: "/w",
      crashAt: 1,
      git: (args, _o, h) => {
        h.files.mkdir(`/w/${args[0]}`);
        return { status: 0, stdout: "", stderr: "" };
      },
    });
    await host.git.start(["made"], { cwd: "/w" });
    expect(host.writes).toBe(0);
    expect(host.files.exists("/w/made")).toBe(true);
  });
});
