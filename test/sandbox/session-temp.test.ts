import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { describe, expect, it } from "vitest";
import { probeSandbox } from "../../src/host/probe-sandbox.ts";
import { runProcess } from "../../src/host/run-process.ts";
import { closeSandboxSession, releaseSandboxed, wrapInSandbox } from "../../src/host/sandbox-session.ts";
import { compileSandbox } from "../../src/sandbox/compile-sandbox.ts";
import { skipped } from "../skip-reason.ts";

const probe = probeSandbox();

describe.skipIf(skipped(!probe.available, `no OS sandbox here: ${probe.available ? "" : probe.reason}`))("the sandbox's proxy session", () => {
  it("starts though what sits where the library names its socket cannot be removed (another user's file, left by a killed run), and leaves TMPDIR as it was", async () => {
    // the library names one socket by this process's id in the temp dir; a directory there
    // cannot be removed by unlink, not even by root, as another user's file cannot by us
    const blocked: string[] = [];
    for (let i = 0; i < 8; i++) {
      const path = join(tmpdir(), `srt-mux-${process.pid}-${i.toString(36)}.sock`);
      try {
        mkdirSync(path);
        blocked.push(path);
      } catch {
        // something is there already (another user's socket): as good a block
      }
    }
    const root = mkdtempSync(join(tmpdir(), "pl-session-"));
    const work = join(root, "repo");
    mkdirSync(join(work, "src"), { recursive: true });
    const before = process.env.TMPDIR;
    try {
      const profile = compileSandbox({ workdir: work, home: join(root, "home"), tempDir: join(root, "tmp"), write: ["src/**"], agent: "command", network: ["127.0.0.1:9"] });
      const wrapped = await wrapInSandbox(profile, ["sh", "-c", "echo in > src/x.txt"], work);
      expect(process.env.TMPDIR).toBe(before);
      const r = await runProcess({ command: wrapped.argv, cwd: work, env: { ...process.env, ...wrapped.env }, timeoutMs: 30_000 });
      releaseSandboxed(wrapped);
      expect(r.exitCode, r.stderrTail).toBe(0);
    } finally {
      await closeSandboxSession();
      for (const path of blocked) rmSync(path, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
    }
  }, 60_000);
});
