/**
 * A CLI's command as it runs inside phaseloop's OS sandbox. Codex sandboxes its own commands
 * with bubblewrap, which needs a new user namespace; the fence refuses those (a nested user
 * namespace could detach the fence's read-only binds), so inside it every command codex ran
 * failed with "bwrap: No permissions to create new namespace". Inside the fence codex is told
 * to leave the sandboxing to the fence (`-s danger-full-access`): the fence's profile is as
 * strict or stricter (only the write globs' directories writable, no `.git`, home secrets
 * hidden, only the agent's hosts reachable).
 */
import { basename } from "node:path";

export function insideFence(command: string[] | string): string[] | string {
  if (typeof command === "string" || basename(command[0] ?? "") !== "codex" || command[1] !== "exec") return command;
  return command.map((arg, i) => (i > 0 && (command[i - 1] === "-s" || command[i - 1] === "--sandbox") ? "danger-full-access" : arg));
}
