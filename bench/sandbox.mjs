// The OS sandbox's cost per phase: a phase process (`sh -c true`) wrapped the way phaseloop
// wraps a phase (dist/host/sandbox-session.js: on Linux phaseloop's own bubblewrap fence,
// elsewhere the library's), against the same process unwrapped, in the same run. The proxy
// starts once, before the measurement, as it does once per run.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const runOnce = (argv, env, cwd) =>
  new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env, cwd });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${argv.join(" ")} exited ${code}`))));
  });

const dist = (rel) => fileURLToPath(new URL(`../dist/${rel}`, import.meta.url));

/**
 * A bare bubblewrap launch with the same namespaces as a phase's fence (user, PID, network,
 * mount; the root read-only, /dev and /proc): the floor any fence built on bubblewrap pays.
 */
export const BARE_BWRAP = ["bwrap", "--new-session", "--die-with-parent", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--unshare-user", "--cap-drop", "ALL", "--proc", "/proc", "--", "sh", "-c", "true"];

/** Returns { sandboxedMs, plainMs, libraryMs, bareMs } medians per phase, or undefined when no sandbox runs here. */
export async function benchSandbox(work, repetitions, median) {
  const { probeSandbox } = await import(dist("host/probe-sandbox.js"));
  if (!probeSandbox().available) return undefined;
  const session = await import(dist("host/sandbox-session.js"));
  const { compileSandbox } = await import(dist("sandbox/compile-sandbox.js"));
  const dir = join(work, "sandbox-repo");
  mkdirSync(join(dir, "src"), { recursive: true });
  mkdirSync(join(work, "sandbox-tmp"), { recursive: true });
  mkdirSync(join(work, "home", ".ssh"), { recursive: true });
  const profile = compileSandbox({ workdir: dir, home: join(work, "home"), tempDir: join(work, "sandbox-tmp"), write: ["src/**"], agent: "claude" });
  await session.openSandboxSession();
  const { SandboxManager } = await import("@anthropic-ai/sandbox-runtime");
  const { randomUUID } = await import("node:crypto");
  const libraryProfile = { network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: profile.denyRead, allowWrite: profile.allowWrite, denyWrite: profile.denyWrite } };
  const sandboxed = [];
  const plain = [];
  const library = [];
  const bare = [];
  try {
    for (let i = 0; i < repetitions + 1; i++) {
      let t = process.hrtime.bigint();
      await runOnce(["sh", "-c", "true"], process.env, dir);
      const plainMs = Number(process.hrtime.bigint() - t) / 1e6;
      t = process.hrtime.bigint();
      await runOnce(BARE_BWRAP, process.env, dir);
      const bareMs = Number(process.hrtime.bigint() - t) / 1e6;
      t = process.hrtime.bigint();
      const wrapped = await session.wrapInSandbox(profile, ["sh", "-c", "true"], dir);
      await runOnce(wrapped.argv, { ...process.env, ...wrapped.env }, dir);
      session.sandboxRefusals(profile, wrapped, "", dir);
      session.releaseSandboxed(wrapped);
      const sandboxedMs = Number(process.hrtime.bigint() - t) / 1e6;
      // the library's own wrap of the same command, for comparison
      t = process.hrtime.bigint();
      const id = `bench-${randomUUID()}`;
      SandboxManager.registerCommandNetworkLists(id, { allowedDomains: profile.allowedHosts });
      const lib = await SandboxManager.wrapWithSandboxArgv("true", "/bin/sh", libraryProfile, undefined, dir, { commandId: id });
      await runOnce(lib.argv, { ...process.env, ...lib.env }, dir);
      SandboxManager.unregisterCommandNetworkLists(id);
      SandboxManager.cleanupAfterCommand();
      const libraryMs = Number(process.hrtime.bigint() - t) / 1e6;
      if (i === 0) continue; // the first wrap loads the lazy parts
      plain.push(plainMs);
      bare.push(bareMs);
      sandboxed.push(sandboxedMs);
      library.push(libraryMs);
    }
  } finally {
    await session.closeSandboxSession();
  }
  return { sandboxedMs: median(sandboxed), plainMs: median(plain), libraryMs: median(library), bareMs: median(bare) };
}
