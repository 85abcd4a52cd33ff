/**
 * Whether this machine can run phases in an OS sandbox, and if not, why and what to do.
 * Linux needs bubblewrap and unprivileged user namespaces (or root), and socat for the
 * proxy through which a phase reaches its allowed hosts; without socat, phases that may
 * reach no host are still fenced (`noProxy` says why the others cannot be). macOS has Seatbelt.
 */
import { spawnSync } from "node:child_process";
import { ownProgram } from "./own-programs.ts";
import { readFileSync } from "node:fs";
import process from "node:process";
import { ownFenceAvailable } from "./linux-fence.ts";

export type SandboxProbe = { available: true; platform: "linux" | "macos"; noProxy?: { reason: string; fix: string } } | { available: false; reason: string; fix: string };

function onPath(program: string): boolean {
  return ownProgram(program).startsWith("/");
}

function readSysctl(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

let cached: SandboxProbe | undefined;

export function probeSandbox(): SandboxProbe {
  cached ??= probe();
  return cached;
}

/** Under Deno, the permissions the sandbox needs that this process lacks. */
function missingDenoPermissions(): string[] {
  const deno = (globalThis as { Deno?: { permissions?: { querySync?(d: { name: string }): { state: string } } } }).Deno;
  const query = deno?.permissions?.querySync;
  if (query === undefined) return [];
  return ["sys", "net"].filter((name) => query.call(deno!.permissions, { name }).state !== "granted");
}

function probe(): SandboxProbe {
  const lacking = missingDenoPermissions();
  if (lacking.length > 0) {
    return {
      available: false,
      reason: `Deno was started without ${lacking.map((p) => `--allow-${p}`).join(" and ")}, which the sandbox's network proxy needs (user ids, a loopback listener)`,
      fix: `run phaseloop with deno run ${lacking.map((p) => `--allow-${p}`).join(" ")} (or -A)`,
    };
  }
  if (process.platform === "darwin") {
    return onPath("sandbox-exec")
      ? { available: true, platform: "macos" }
      : { available: false, reason: "sandbox-exec (Seatbelt) is not on PATH", fix: "run phaseloop on macOS with /usr/bin on PATH" };
  }
  if (process.platform !== "linux") {
    return { available: false, reason: `no OS sandbox on ${process.platform}`, fix: "run on Linux (bubblewrap) or macOS, or set sandbox: off" };
  }
  const missing = ["bwrap", "socat"].filter((p) => !onPath(p));
  // phaseloop's own fence (it needs no socat) is what fences a phase without a proxy
  if (missing.includes("bwrap") || (missing.includes("socat") && !ownFenceAvailable())) {
    return {
      available: false,
      reason: `${missing.join(" and ")} not found on PATH`,
      fix: "install them: apt-get install bubblewrap socat ripgrep (Debian/Ubuntu), dnf install bubblewrap socat ripgrep (Fedora)",
    };
  }
  const trial = spawnSync(ownProgram("bwrap"), ["--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--die-with-parent", "true"], { encoding: "utf8" });
  if (trial.status === 0) {
    if (!missing.includes("socat")) return { available: true, platform: "linux" };
    return { available: true, platform: "linux", noProxy: { reason: "socat, which runs the proxy to a phase's allowed hosts, is not found on PATH", fix: "install it: apt-get install socat (Debian/Ubuntu), dnf install socat (Fedora)" } };
  }
  const stderr = (trial.stderr ?? "").trim();
  if (readSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") === "1") {
    return {
      available: false,
      reason: `bwrap cannot create a user namespace: AppArmor restricts unprivileged user namespaces (${stderr})`,
      fix: "allow them for bwrap with an AppArmor profile (/etc/apparmor.d/bwrap: `abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }`, then `apparmor_parser -r /etc/apparmor.d/bwrap`), or `sysctl kernel.apparmor_restrict_unprivileged_userns=0`",
    };
  }
  if (readSysctl("/proc/sys/kernel/unprivileged_userns_clone") === "0" || readSysctl("/proc/sys/user/max_user_namespaces") === "0") {
    return {
      available: false,
      reason: `bwrap cannot create a user namespace: unprivileged user namespaces are disabled (${stderr})`,
      fix: "enable them: sysctl kernel.unprivileged_userns_clone=1 and sysctl user.max_user_namespaces=15000",
    };
  }
  return {
    available: false,
    reason: `bwrap fails here: ${stderr || `exit ${trial.status}`}`,
    fix: "inside a container, run it with --privileged or a seccomp profile that allows user namespaces (unshare, clone with CLONE_NEWUSER)",
  };
}
