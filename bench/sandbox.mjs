// The OS sandbox's cost per phase: a phase process (`sh -c true`) wrapped the way phaseloop
// wraps a phase (dist/host/sandbox-session.js: on Linux phaseloop's own bubblewrap fence,
// elsewhere the library's) and started the way phaseloop starts a phase's process
// (dist/host/run-process.js), against the same process unwrapped, and against the floor
// any fence built on bubblewrap pays, written by hand, all started the same way in the same
// rounds. The proxy starts once, before the measurement, as it does once per run.
import { existsSync, mkdirSync } from "node:fs";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const dist = (rel) => fileURLToPath(new URL(`../dist/${rel}`, import.meta.url));

/**
 * A bare bubblewrap launch with the same namespaces as a phase's fence (user, PID, network,
 * mount; the root read-only, /dev and /proc): the floor any fence built on bubblewrap pays.
 */
export const BARE_BWRAP = ["bwrap", "--new-session", "--die-with-parent", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--unshare-user", "--cap-drop", "ALL", "--proc", "/proc", "--", "sh", "-c", "true"];

/**
 * Returns medians per phase, or undefined when no sandbox runs here:
 * - plainMs: `sh -c true` started as a phase's process is;
 * - bareMs: BARE_BWRAP around it;
 * - sandboxedMs: a phase that may reach no host (a `run:` phase, a command agent), wrapped,
 *   started, its refusals read and the wrap released;
 * - proxiedMs: the same for a phase that may reach a host (claude's API host): the relay to
 *   the proxy starts inside;
 * - floorMs: the no-host fence's own bwrap command line, made once, started as is: what its
 *   mounts cost beyond BARE_BWRAP, and the floor under phaseloop's per-phase work;
 * - proxiedFloorMs: the same for the fence with the relay (its command line made once);
 * - relayFloorMs: the floor of that one written by hand: BARE_BWRAP with the proxy's socket
 *   bound in, starting the same relay (perl: listen, fork the relay, load the filter, exec);
 * - libraryMs: the sandbox library's own wrap of the same command, for comparison.
 */
export async function benchSandbox(work, repetitions, median) {
  const { probeSandbox } = await import(dist("host/probe-sandbox.js"));
  if (!probeSandbox().available) return undefined;
  const session = await import(dist("host/sandbox-session.js"));
  const { runProcess } = await import(dist("host/run-process.js"));
  const { compileSandbox } = await import(dist("sandbox/compile-sandbox.js"));
  const { PERL_RELAY, RELAY_PORT, proxyEnv } = await import(dist("sandbox/bwrap-args.js"));
  const { ARCHES, filterHex } = await import(dist("sandbox/seccomp-filter.js"));
  const dir = join(work, "sandbox-repo");
  mkdirSync(join(dir, "src"), { recursive: true });
  mkdirSync(join(work, "sandbox-tmp"), { recursive: true });
  mkdirSync(join(work, "home", ".ssh"), { recursive: true });
  const input = { workdir: dir, home: join(work, "home"), tempDir: join(work, "sandbox-tmp"), write: ["src/**"] };
  const profile = compileSandbox({ ...input, agent: "command" });
  const proxied = compileSandbox({ ...input, agent: "claude" });
  await session.openSandboxSession();
  const { SandboxManager } = await import("@anthropic-ai/sandbox-runtime");
  const { randomUUID } = await import("node:crypto");
  const libraryProfile = { network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: proxied.denyRead, allowWrite: proxied.allowWrite, denyWrite: proxied.denyWrite } };
  const runOnce = async (argv, env) => {
    const r = await runProcess({ command: argv, cwd: dir, env });
    if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} exited ${r.exitCode}: ${r.stderrTail}`);
  };
  const fenced = async (p) => {
    const wrapped = await session.wrapInSandbox(p, ["sh", "-c", "true"], dir, {}, process.env.PATH);
    await runOnce(wrapped.argv, { ...process.env, ...wrapped.env });
    session.sandboxRefusals(p, wrapped, "", dir);
    session.releaseSandboxed(wrapped);
  };
  // the relay's floor: what a fence that may reach a host cannot do without
  const socket = SandboxManager.getLinuxHttpSocketPath();
  const token = SandboxManager.getProxyAuthToken();
  const hex = filterHex(process.arch);
  const perl = ["/usr/bin/perl", "/bin/perl"].find((p) => existsSync(p)) ?? "perl";
  const relayArgv = [...BARE_BWRAP.slice(0, BARE_BWRAP.indexOf("--")), "--bind", socket, socket, "--", perl, "-e", PERL_RELAY, String(ARCHES[process.arch]?.prctl ?? 157), hex ?? "", socket, String(RELAY_PORT), "sh", "-c", "true"];
  const relayEnv = { ...process.env, ...proxyEnv({ socket, token, username: `srt.${Buffer.from("bench").toString("base64")}` }) };
  // the floor of this fence written by hand: the very bwrap command line phaseloop makes for
  // the phase (its namespaces and the mounts its profile needs), made once and started each round
  const made = await session.wrapInSandbox(profile, ["sh", "-c", "true"], dir, {}, process.env.PATH);
  session.releaseSandboxed(made);
  const madeProxied = await session.wrapInSandbox(proxied, ["sh", "-c", "true"], dir, {}, process.env.PATH);
  const rounds = {
    floor: () => runOnce(made.argv, { ...process.env, ...made.env }),
    proxiedFloor: () => runOnce(madeProxied.argv, { ...process.env, ...madeProxied.env }),
    plain: () => runOnce(["sh", "-c", "true"], process.env),
    bare: () => runOnce(BARE_BWRAP, process.env),
    sandboxed: () => fenced(profile),
    proxied: () => fenced(proxied),
    relayFloor: () => runOnce(relayArgv, relayEnv),
    library: async () => {
      const id = `bench-${randomUUID()}`;
      SandboxManager.registerCommandNetworkLists(id, { allowedDomains: proxied.allowedHosts });
      const lib = await SandboxManager.wrapWithSandboxArgv("true", "/bin/sh", libraryProfile, undefined, dir, { commandId: id });
      await runOnce(lib.argv, { ...process.env, ...lib.env });
      SandboxManager.unregisterCommandNetworkLists(id);
      SandboxManager.cleanupAfterCommand();
    },
  };
  const times = Object.fromEntries(Object.keys(rounds).map((k) => [k, []]));
  try {
    for (let i = 0; i < repetitions + 1; i++) {
      // in a different order each round, so that no case always follows the same one
      const order = Object.keys(rounds);
      for (let j = order.length - 1; j > 0; j--) {
        const k = Math.floor(Math.random() * (j + 1));
        [order[j], order[k]] = [order[k], order[j]];
      }
      for (const name of order) {
        const t = process.hrtime.bigint();
        await rounds[name]();
        // the first round loads the lazy parts
        if (i > 0) times[name].push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }
  } finally {
    session.releaseSandboxed(madeProxied);
    await session.closeSandboxSession();
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [`${k}Ms`, median(v)]));
}
