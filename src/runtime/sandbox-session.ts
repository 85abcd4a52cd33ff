/**
 * One OS sandbox per run: the library's network proxies start once, each phase's process is
 * wrapped in its own profile (bubblewrap on Linux, Seatbelt on macOS), and what the sandbox
 * refused is read back from the library's violation records and the process's own errors.
 */
import { randomUUID } from "node:crypto";
import process from "node:process";
import { SandboxManager } from "@anthropic-ai/sandbox-runtime";
import type { SandboxProfile } from "../sandbox/compile-sandbox.ts";

export interface WrappedCommand {
  /** argv to spawn without a shell. */
  argv: string[];
  /** Variables to lay over the phase's environment (proxy settings). */
  env: Record<string, string>;
  /** Key under which the library records this process's violations. */
  commandId: string;
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

let opened: Promise<void> | undefined;

/** Start the sandbox's proxies for this process (once; later calls reuse them). */
export function openSandboxSession(): Promise<void> {
  opened ??= SandboxManager.initialize({
    network: { allowedDomains: [], deniedDomains: [] },
    filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
  });
  return opened;
}

/** Stop the proxies. */
export async function closeSandboxSession(): Promise<void> {
  if (opened === undefined) return;
  opened = undefined;
  await SandboxManager.reset();
}

/** Wrap a command (argv, or a string for `sh -c`) so it runs inside `profile`. */
export async function wrapInSandbox(profile: SandboxProfile, command: string[] | string, cwd: string): Promise<WrappedCommand> {
  await openSandboxSession();
  const commandId = `phaseloop-${randomUUID()}`;
  SandboxManager.registerCommandNetworkLists(commandId, { allowedDomains: profile.allowedHosts });
  const text = typeof command === "string" ? command : command.map(shellQuote).join(" ");
  const wrapped = await SandboxManager.wrapWithSandboxArgv(
    text,
    "/bin/sh",
    {
      network: { allowedDomains: [], deniedDomains: [] },
      filesystem: { denyRead: profile.denyRead, allowWrite: profile.allowWrite, denyWrite: profile.denyWrite },
    },
    undefined,
    cwd,
    { commandId },
  );
  const env: Record<string, string> = {};
  // Only what the library adds (proxy settings): the phase's own environment stays the phase's.
  for (const [key, value] of Object.entries(wrapped.env)) if (value !== undefined && value !== process.env[key]) env[key] = value;
  return { argv: wrapped.argv, env, commandId };
}

/** Release what was kept for one wrapped command. */
export function releaseSandboxed(wrapped: WrappedCommand): void {
  SandboxManager.unregisterCommandNetworkLists(wrapped.commandId);
  SandboxManager.cleanupAfterCommand();
}

const READ_ONLY = /(?:^|\s|')(\/[^\s:']+)['"]?:?\s*(?:Read-only file system|EROFS)/;
const READ_ONLY_ALT = /(?:cannot create|can't create|cannot open|cannot touch|open|write)[^\n]*?'?(\/[^\s:']+)'?[^\n]*(?:Read-only file system|EROFS)/;
const PERMISSION = /(?:^|\s|')(\/[^\s:']+)['"]?:?\s*(?:Permission denied|EACCES|Operation not permitted)/;

/**
 * What the sandbox refused this command: paths it could not write or read, hosts the proxy
 * denied. Read from the library's violation records and from the process's stderr.
 */
export function sandboxRefusals(profile: SandboxProfile, wrapped: WrappedCommand, stderr: string): string[] {
  const refused = new Set<string>();
  for (const violation of SandboxManager.getSandboxViolationStore().getViolationsForCommand(wrapped.commandId)) {
    refused.add(violation.line.trim());
  }
  for (const line of stderr.split("\n")) {
    const write = READ_ONLY.exec(line) ?? READ_ONLY_ALT.exec(line);
    if (write?.[1] !== undefined) {
      refused.add(`write ${write[1]}`);
      continue;
    }
    const denied = PERMISSION.exec(line);
    if (denied?.[1] !== undefined) {
      refused.add(`access ${denied[1]}`);
      continue;
    }
    for (const secret of profile.denyRead) {
      if (line.includes(secret)) refused.add(`read ${secret}`);
    }
    const host = /(?:403|Forbidden|blocked by|denied)[^\n]*?\b([a-z0-9.-]+\.[a-z]{2,}|\d+\.\d+\.\d+\.\d+)(?::\d+)?/i.exec(line);
    if (host?.[1] !== undefined && !profile.allowedHosts.includes(host[1])) refused.add(`connect ${host[1]}`);
  }
  return [...refused];
}
