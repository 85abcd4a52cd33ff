// The OS sandbox's cost per phase: a phase process (`true`) wrapped in a profile like the ones
// phaseloop compiles, against the same process unwrapped, in the same run. The proxies start
// once, before the measurement, as they do once per run.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const runOnce = (argv, env) =>
  new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${argv.join(" ")} exited ${code}`))));
  });

/** Returns { sandboxedMs, plainMs } medians per phase, or undefined when no sandbox runs here. */
export async function benchSandbox(work, repetitions, median) {
  const { SandboxManager } = await import("@anthropic-ai/sandbox-runtime");
  if (SandboxManager.checkDependencies().errors.length > 0) return undefined;
  const dir = join(work, "sandbox-repo");
  mkdirSync(join(dir, "src"), { recursive: true });
  mkdirSync(join(work, "sandbox-tmp"), { recursive: true });
  await SandboxManager.initialize({ network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowWrite: [], denyWrite: [] } });
  const profile = {
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [join(work, "home/.ssh")], allowWrite: [join(dir, "src"), join(work, "sandbox-tmp")], denyWrite: [join(dir, ".git")] },
  };
  const sandboxed = [];
  const plain = [];
  try {
    for (let i = 0; i < repetitions + 1; i++) {
      let t = process.hrtime.bigint();
      await runOnce(["sh", "-c", "true"], process.env);
      const plainMs = Number(process.hrtime.bigint() - t) / 1e6;
      t = process.hrtime.bigint();
      const id = randomUUID();
      SandboxManager.registerCommandNetworkLists(id, { allowedDomains: ["api.anthropic.com"] });
      const { argv, env } = await SandboxManager.wrapWithSandboxArgv("true", "/bin/sh", profile, undefined, dir, { commandId: id });
      await runOnce(argv, env);
      SandboxManager.unregisterCommandNetworkLists(id);
      SandboxManager.cleanupAfterCommand();
      const sandboxedMs = Number(process.hrtime.bigint() - t) / 1e6;
      if (i === 0) continue; // the first wrap loads the library's lazy parts
      plain.push(plainMs);
      sandboxed.push(sandboxedMs);
    }
  } finally {
    await SandboxManager.reset();
  }
  return { sandboxedMs: median(sandboxed), plainMs: median(plain) };
}
